import type { Config } from './config.js';
import type { Storage } from './db/database.js';
import { DELIVERY_CHANNEL } from './db/dialect.js';
import type { DeliveryWorker, WorkerLogger } from './modules/delivery-engine/delivery.worker.js';
import type { Services } from './services.js';

export interface RunningWorker {
  worker: DeliveryWorker;
  /** Stops claiming, finishes attempts in flight (bounded by `graceMs`), stops listening. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Runs the services' delivery worker: woken by `deliveriesDue` (this process's commits), by
 * `storage.listen` notifications (other processes' commits, where the database has them) and by a
 * poll every WEBHOOK_POLL_MS (a database file shared with other processes); and runs the periodic
 * jobs (retention purges), once at start and then every `everyMs`.
 */
export async function runDeliveryWorker(opts: {
  services: Services;
  storage: Storage;
  config: Config;
  log: WorkerLogger;
}): Promise<RunningWorker> {
  const { storage, config, log } = opts;
  const worker = opts.services.delivery;
  const unlisten = storage.listen ? await storage.listen(DELIVERY_CHANNEL, () => worker.wake()) : undefined;
  const timers = opts.services.jobs.map((job) => {
    const run = () =>
      job.run().then(
        (n) => n > 0 && log.info({ job: job.id, count: n }, job.name),
        (err) => log.warn({ err }, `${job.name} failed`),
      );
    const timer = setInterval(run, job.everyMs);
    timer.unref();
    void run();
    return timer;
  });
  worker.start();
  log.info(
    {
      workerId: worker.workerId,
      concurrency: config.WEBHOOK_CONCURRENCY,
      perEndpoint: config.WEBHOOK_ENDPOINT_CONCURRENCY,
    },
    'delivery worker started',
  );
  return {
    worker,
    async stop(graceMs = 10_000) {
      for (const t of timers) clearInterval(t);
      await unlisten?.();
      await worker.stop(graceMs);
      log.info({ workerId: worker.workerId, ...worker.stats }, 'delivery worker stopped');
    },
  };
}
