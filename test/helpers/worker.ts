import type { Clock } from '../../src/kernel/clock.js';
import { systemActor } from '../../src/kernel/principal.js';
import {
  createDeliveryWorker,
  type DeliveryWorker,
  type WorkerLogger,
} from '../../src/modules/delivery-engine/delivery.worker.js';
import type { TestApp } from './app.js';

/**
 * The real delivery worker on a test app's database, with its settings. It listens to the app's
 * commits unless `listen: false`; nothing runs until `start()` or `runOnce()`.
 */
export function testWorker(
  t: TestApp,
  opts: { clock?: Clock; random?: () => number; listen?: boolean; log?: WorkerLogger } = {},
): DeliveryWorker {
  return createDeliveryWorker({
    outbox: t.services.outbox,
    operator: t.services.operatorEvents,
    unit: t.services.uow.as(systemActor('worker')),
    clock: opts.clock ?? { now: () => Date.now() },
    config: t.config,
    deliveriesDue: opts.listen === false ? undefined : t.services.deliveriesDue,
    random: opts.random,
    log: opts.log,
  });
}
