import { randomBytes } from 'node:crypto';
import type { Config } from '../../config.js';
import type { Db, Dialect } from '../../db/dialect.js';
import { type Clock, isoAt } from '../../lib/clock.js';
import type { Signal } from '../../lib/signal.js';
import { afterAttempt, type RetryPolicy } from './backoff.js';
import { type AttemptResult, type ClaimedDelivery, deliveryRepository as repo } from './delivery.repository.js';
import { createSender, type Send } from './sender.js';
import { deliveryHeaders } from './signing.js';

export interface WorkerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface DeliveryWorkerDeps {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  config: Pick<
    Config,
    | 'WEBHOOK_MAX_RETRIES'
    | 'WEBHOOK_RETRY_BASE_MS'
    | 'WEBHOOK_RETRY_FACTOR'
    | 'WEBHOOK_TIMEOUT_MS'
    | 'WEBHOOK_CONCURRENCY'
    | 'WEBHOOK_ALLOW_INSECURE_URLS'
    | 'WEBHOOK_POLL_MS'
  >;
  /** Rung by this process's services after a commit that queued deliveries. */
  deliveriesDue?: Signal;
  log?: WorkerLogger;
  send?: Send;
  random?: () => number;
}

const CLAIM_BATCH = 100;

/**
 * The D18 delivery engine. Claims due deliveries with a lease (D20), attempts them concurrently up
 * to WEBHOOK_CONCURRENCY (one slow receiver holds one slot, never the others), and writes the
 * outcomes back in batches. A claim whose worker dies is retaken when its lease passes, so every
 * delivery is attempted at least once, always with the same event id and body.
 */
export function createDeliveryWorker(deps: DeliveryWorkerDeps) {
  const { db, dialect, clock, config } = deps;
  const workerId = `wrk_${randomBytes(8).toString('hex')}`;
  const send =
    deps.send ??
    createSender({ timeoutMs: config.WEBHOOK_TIMEOUT_MS, allowInsecure: config.WEBHOOK_ALLOW_INSECURE_URLS });
  const policy: RetryPolicy = {
    maxRetries: config.WEBHOOK_MAX_RETRIES,
    baseMs: config.WEBHOOK_RETRY_BASE_MS,
    factor: config.WEBHOOK_RETRY_FACTOR,
  };
  // Long enough for one attempt and the write of its outcome; a dead worker's claims return after it.
  const leaseMs = 2 * config.WEBHOOK_TIMEOUT_MS + 1000;
  const inflight = new Map<string, Promise<void>>();
  let results: AttemptResult[] = [];
  let running = false;
  let stopping = false;
  let pumping: Promise<void> | null = null;
  let pumpAgain = false;
  let flushing: Promise<void> | null = null;
  let pollTimer: NodeJS.Timeout | undefined;
  let dueTimer: { at: number; timer: NodeJS.Timeout } | undefined;
  let unsubscribe: (() => void) | undefined;
  const stats = { claimed: 0, succeeded: 0, failed: 0 };

  /** Claims and starts attempts until the pool is full or nothing is due. */
  function pump(): Promise<void> {
    if (pumping) {
      pumpAgain = true;
      return pumping;
    }
    pumping = (async () => {
      do {
        pumpAgain = false;
        while (!stopping && inflight.size < config.WEBHOOK_CONCURRENCY) {
          const limit = Math.min(CLAIM_BATCH, config.WEBHOOK_CONCURRENCY - inflight.size);
          const now = clock.now();
          const claimed = await dialect.writeTransaction(db, (trx) =>
            repo.claim(trx, {
              now: isoAt(now),
              leaseUntil: isoAt(now + leaseMs),
              workerId,
              limit,
              rowLocks: dialect.rowLocks,
            }),
          );
          stats.claimed += claimed.length;
          for (const d of claimed) start(d);
          if (claimed.length < limit) break;
        }
      } while (pumpAgain && !stopping);
    })()
      .catch((err) => deps.log?.warn({ err }, 'claiming deliveries failed; retrying on the next tick'))
      .finally(() => {
        pumping = null;
      });
    return pumping;
  }

  function start(d: ClaimedDelivery): void {
    const p = attempt(d).finally(() => {
      inflight.delete(d.id);
      if (running) void pump();
    });
    inflight.set(d.id, p);
  }

  async function attempt(d: ClaimedDelivery): Promise<void> {
    const attemptedAt = clock.now();
    const r = await send(d.url, deliveryHeaders(d.secret, d.event_id, d.payload, attemptedAt), d.payload);
    const now = clock.now();
    const next = afterAttempt(d.attempt_count + 1, r.ok, policy, now, deps.random);
    if (r.ok) stats.succeeded++;
    else stats.failed++;
    results.push({
      deliveryId: d.id,
      status: next.status,
      nextAttemptAt: next.nextAttemptAtMs === null ? null : isoAt(next.nextAttemptAtMs),
      attempt: {
        number: d.attempt_count + 1,
        attempted_at: isoAt(attemptedAt),
        duration_ms: r.durationMs,
        response_status: r.status,
        response_body: r.body,
        error: r.error,
      },
    });
    if (next.nextAttemptAtMs !== null) wakeAt(next.nextAttemptAtMs);
    await flush();
  }

  /** Writes every queued outcome in one transaction (one commit for many attempts). */
  function flush(): Promise<void> {
    if (flushing) return flushing.then(() => (results.length > 0 ? flush() : undefined));
    if (results.length === 0) return Promise.resolve();
    const batch = results;
    results = [];
    flushing = dialect
      .writeTransaction(db, (trx) => repo.complete(trx, workerId, batch, isoAt(clock.now())))
      .then(
        () => undefined,
        (err) => {
          // Not written: the leases lapse and the attempts run again (at least once, D18).
          deps.log?.warn({ err, deliveries: batch.length }, 'recording delivery attempts failed');
        },
      )
      .finally(() => {
        flushing = null;
      });
    return flushing;
  }

  /** Wakes the pump when this process's own retry falls due (others' retries: the poll). */
  function wakeAt(atMs: number): void {
    if (!running || (dueTimer && dueTimer.at <= atMs)) return;
    if (dueTimer) clearTimeout(dueTimer.timer);
    const timer = setTimeout(
      () => {
        dueTimer = undefined;
        void pump();
      },
      Math.max(0, atMs - clock.now()),
    );
    timer.unref();
    dueTimer = { at: atMs, timer };
  }

  return {
    workerId,
    stats,
    /** Starts claiming: now, whenever deliveries are signalled, and every WEBHOOK_POLL_MS. */
    start(): void {
      if (running) return;
      running = true;
      stopping = false;
      unsubscribe = deps.deliveriesDue?.subscribe(() => void pump());
      pollTimer = setInterval(() => void pump(), config.WEBHOOK_POLL_MS);
      pollTimer.unref();
      void pump();
    },
    /** Wakes the worker now (e.g. on a PostgreSQL NOTIFY). */
    wake(): void {
      if (running) void pump();
    },
    /**
     * Stops claiming, waits up to `graceMs` for attempts in flight and writes their outcomes.
     * Attempts still running after that keep their lease and are retried after it lapses.
     */
    async stop(graceMs = 10_000): Promise<void> {
      running = false;
      stopping = true;
      unsubscribe?.();
      clearInterval(pollTimer);
      if (dueTimer) clearTimeout(dueTimer.timer);
      dueTimer = undefined;
      await pumping;
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((r) => {
        timer = setTimeout(r, graceMs);
      });
      await Promise.race([Promise.allSettled([...inflight.values()]), grace]);
      clearTimeout(timer);
      await flush();
    },
    /** One claim pass without starting the loop, then waits for its attempts (tests with a controlled clock). */
    async runOnce(): Promise<number> {
      const before = stats.claimed;
      await pump();
      await Promise.allSettled([...inflight.values()]);
      await flush();
      return stats.claimed - before;
    },
    /** Resolves when nothing is in flight and every outcome is written. */
    async idle(): Promise<void> {
      while (pumping || inflight.size > 0 || flushing || results.length > 0) {
        await pumping;
        await Promise.allSettled([...inflight.values()]);
        await flush();
      }
    },
  };
}
export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
