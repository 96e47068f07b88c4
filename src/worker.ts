import type { Config } from './config.js';
import type { Storage } from './db/database.js';
import { DELIVERY_CHANNEL } from './db/dialect.js';
import { type Clock, systemClock } from './lib/clock.js';
import { createSignal, type Signal } from './lib/signal.js';
import { createDeliveryWorker, type DeliveryWorker, type WorkerLogger } from './modules/delivery/delivery.worker.js';
import { createEventsService } from './modules/events/events.service.js';

/** How often the 30-day retention purge of events and delivery logs runs (D17). */
const PURGE_EVERY_MS = 60 * 60 * 1000;

export interface RunningWorker {
  worker: DeliveryWorker;
  /** Stops claiming, finishes attempts in flight (bounded by `graceMs`), stops listening. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Runs the delivery worker on `storage`: woken by `deliveriesDue` (this process's commits), by
 * `storage.listen` notifications (other processes' commits, where the database has them) and by a
 * poll every WEBHOOK_POLL_MS (a database file shared with other processes); purges events and delivery logs older than 30 days every hour.
 */
export async function runDeliveryWorker(opts: {
  storage: Storage;
  config: Config;
  log: WorkerLogger;
  clock?: Clock;
  deliveriesDue?: Signal;
}): Promise<RunningWorker> {
  const { storage, config, log } = opts;
  const clock = opts.clock ?? systemClock;
  const deliveriesDue = opts.deliveriesDue ?? createSignal();
  const worker = createDeliveryWorker({ db: storage.db, dialect: storage.dialect, clock, config, deliveriesDue, log });
  const events = createEventsService({ db: storage.db, dialect: storage.dialect, clock, deliveriesDue });
  const unlisten = storage.listen ? await storage.listen(DELIVERY_CHANNEL, () => worker.wake()) : undefined;
  const purge = () =>
    events.purgeExpired().then(
      (n) => n > 0 && log.info({ events: n }, 'purged events older than 30 days'),
      (err) => log.warn({ err }, 'purging old events failed'),
    );
  const purgeTimer = setInterval(purge, PURGE_EVERY_MS);
  purgeTimer.unref();
  void purge();
  worker.start();
  log.info({ workerId: worker.workerId, concurrency: config.WEBHOOK_CONCURRENCY }, 'delivery worker started');
  return {
    worker,
    async stop(graceMs = 10_000) {
      clearInterval(purgeTimer);
      await unlisten?.();
      await worker.stop(graceMs);
      log.info({ workerId: worker.workerId, ...worker.stats }, 'delivery worker stopped');
    },
  };
}
