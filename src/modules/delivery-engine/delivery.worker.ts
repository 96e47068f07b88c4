import { randomBytes } from 'node:crypto';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { createSender, type Send } from '../../lib/http-send.js';
import type { Signal } from '../../lib/signal.js';
import type { Unit } from '../../platform/unit-of-work.js';
import { afterAttempt, type RetryPolicy } from './backoff.js';
import type { AttemptResult, ClaimedDelivery } from './claims.js';
import { deliveryHeaders } from './signing.js';

export interface WorkerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** What one cycle may claim: due at `now`, leased until `leaseUntil`, at most `limit`, within the per-endpoint cap. */
export interface DeliveryClaim {
  now: string;
  leaseUntil: string;
  limit: number;
  perEndpoint: number;
  /** Attempts in flight in this worker, per webhook id. */
  busy: ReadonlyMap<string, number>;
}

/**
 * Where deliveries come from: each cycle writes the outcomes of the attempts finished since the last one and claims
 * up to `claim.limit` due deliveries, in the change of `u`.
 */
export interface DeliverySource {
  workerCycle(u: Unit, workerId: string, outcomes: AttemptResult[], claim: DeliveryClaim): Promise<ClaimedDelivery[]>;
}

export interface DeliveryWorkerDeps {
  /** The webhooks module's outbox: the endpoints' deliveries (webhooks/outbox.ts#workerCycle). */
  outbox: DeliverySource;
  /**
   * The operator's deliveries (operator-events): claimed first in the same change, with the same signing and
   * back-off; their claims and outcomes carry `receiver` as their webhook id.
   */
  operator?: DeliverySource & { receiver: string };
  /** The door the worker writes through, as the `worker` system actor (checked like any actor). */
  unit: Unit;
  clock: Clock;
  /** The WEBHOOK_* settings it runs by (src/config.ts, docs/operations.md). */
  config: {
    WEBHOOK_MAX_RETRIES: number;
    WEBHOOK_RETRY_BASE_MS: number;
    WEBHOOK_RETRY_FACTOR: number;
    WEBHOOK_TIMEOUT_MS: number;
    WEBHOOK_CONCURRENCY: number;
    WEBHOOK_ENDPOINT_CONCURRENCY: number;
    WEBHOOK_ALLOW_INSECURE_URLS: boolean;
    WEBHOOK_POLL_MS: number;
  };
  /** Rung by this process's services after a commit that queued deliveries. */
  deliveriesDue?: Signal;
  log?: WorkerLogger;
  send?: Send;
  random?: () => number;
}

const CLAIM_BATCH = 100;

/**
 * The delivery engine. Claims due deliveries with a lease (docs/api.md#deployment), attempts them
 * concurrently up to WEBHOOK_CONCURRENCY, at most WEBHOOK_ENDPOINT_CONCURRENCY per endpoint and
 * round-robin over workspaces and endpoints (a hanging receiver holds its own few slots, never the
 * others'), and writes the outcomes back in batches. A claim whose worker dies is retaken when its lease passes, so every
 * delivery is attempted at least once, always with the same event id and body.
 */
export function createDeliveryWorker(deps: DeliveryWorkerDeps) {
  const { outbox, clock, config } = deps;
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
  /** Attempts in flight per webhook id: the per-endpoint cap of the next claim. */
  const busy = new Map<string, number>();
  let results: AttemptResult[] = [];
  let running = false;
  let stopping = false;
  let cycling: Promise<void> | null = null;
  let again = false;
  let scheduled = false;
  let pollTimer: NodeJS.Timeout | undefined;
  let dueTimer: { at: number; timer: NodeJS.Timeout } | undefined;
  let unsubscribe: (() => void) | undefined;
  const stats = { claimed: 0, succeeded: 0, failed: 0 };

  /**
   * One write transaction per cycle: the outcomes of every attempt finished since the last cycle,
   * and claims for the free slots. Where a commit is an fsync that blocks the thread (the file
   * database with synchronous=FULL), so one commit per cycle instead of two per delivery is what lets fan-out
   * go at thousands per second. Outcomes not yet written when the process dies are attempted
   * again after their lease (at least once).
   */
  async function cycle(): Promise<void> {
    do {
      again = false;
      const batch = results;
      results = [];
      const room = stopping || !running ? 0 : config.WEBHOOK_CONCURRENCY - inflight.size;
      const limit = Math.min(CLAIM_BATCH, room);
      if (batch.length === 0 && limit === 0) return;
      const now = clock.now();
      let claimed: ClaimedDelivery[] = [];
      try {
        claimed = await claimFrom(batch, {
          now: isoAt(now),
          leaseUntil: isoAt(now + leaseMs),
          limit,
          perEndpoint: config.WEBHOOK_ENDPOINT_CONCURRENCY,
          busy,
        });
      } catch (err) {
        // Not written: those leases lapse and the attempts run again (at least once, docs/api.md#webhook-deliveries).
        deps.log?.warn({ err, outcomes: batch.length }, 'delivery cycle failed; retrying on the next tick');
        return;
      }
      stats.claimed += claimed.length;
      for (const d of claimed) start(d);
      // A full batch may leave more to claim; a short one means nothing more is due and under its cap.
      if (claimed.length === limit && limit > 0) again = true;
    } while (again || results.length > 0);
  }

  /**
   * One change: the outcomes and claims of the operator's deliveries (few; first, so endpoints' backlogs never starve
   * them), then the endpoints' in the room left.
   */
  function claimFrom(batch: AttemptResult[], claim: DeliveryClaim): Promise<ClaimedDelivery[]> {
    const op = deps.operator;
    if (!op) return outbox.workerCycle(deps.unit, workerId, batch, claim);
    return deps.unit.run(async (c) => {
      const ours = batch.filter((r) => r.webhookId === op.receiver);
      const theirs = batch.filter((r) => r.webhookId !== op.receiver);
      const first = await op.workerCycle(c.unit, workerId, ours, claim);
      const rest = await outbox.workerCycle(c.unit, workerId, theirs, { ...claim, limit: claim.limit - first.length });
      return [...first, ...rest];
    });
  }

  /** Runs a cycle soon, coalescing every request of this turn of the event loop into one. */
  function schedule(): void {
    if (cycling) {
      again = true;
      return;
    }
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      void runCycle();
    });
  }

  function runCycle(): Promise<void> {
    if (cycling) {
      again = true;
      return cycling;
    }
    cycling = cycle().finally(() => {
      cycling = null;
      // A request that came after the cycle's last look must not be lost.
      if (again) {
        again = false;
        schedule();
      }
    });
    return cycling;
  }

  function start(d: ClaimedDelivery): void {
    busy.set(d.webhook_id, (busy.get(d.webhook_id) ?? 0) + 1);
    const p = attempt(d).finally(() => {
      inflight.delete(d.id);
      const left = (busy.get(d.webhook_id) ?? 1) - 1;
      if (left > 0) busy.set(d.webhook_id, left);
      else busy.delete(d.webhook_id);
      schedule();
    });
    inflight.set(d.id, p);
  }

  async function attempt(d: ClaimedDelivery): Promise<void> {
    // Disabled after this delivery was queued (e.g. by a transaction that raced the disable): not sent.
    if (d.webhook_status === 'disabled') {
      results.push({
        deliveryId: d.id,
        webhookId: d.webhook_id,
        status: 'cancelled',
        nextAttemptAt: null,
        attempt: null,
      });
      return;
    }
    const attemptedAt = clock.now();
    const headers = deliveryHeaders(liveSecrets(d, attemptedAt), d.event_id, d.payload, attemptedAt);
    const r = await send(d.url, headers, d.payload);
    const now = clock.now();
    const next = afterAttempt(d.attempt_count + 1, r.ok, policy, now, deps.random);
    if (r.ok) stats.succeeded++;
    else {
      stats.failed++;
      deps.log?.info(
        {
          webhookId: d.webhook_id,
          deliveryId: d.id,
          eventId: d.event_id,
          event: d.event_type,
          attempt: d.attempt_count + 1,
          outcome: r.status !== null ? `HTTP ${r.status}` : (r.error ?? 'no response'),
          nextAttemptAt: next.nextAttemptAtMs === null ? null : isoAt(next.nextAttemptAtMs),
        },
        next.nextAttemptAtMs === null ? 'webhook delivery failed; no retries left' : 'webhook delivery attempt failed',
      );
    }
    results.push({
      deliveryId: d.id,
      webhookId: d.webhook_id,
      status: next.status,
      nextAttemptAt: next.nextAttemptAtMs === null ? null : isoAt(next.nextAttemptAtMs),
      attempt: {
        number: d.attempt_count + 1,
        attempted_at: isoAt(attemptedAt),
        duration_ms: r.durationMs,
        response_status: r.status,
        response_body: r.body,
        error: r.error,
        // What the log shows beside the response: the headers as sent (the sender adds content-length).
        request_headers: JSON.stringify({ ...headers, 'content-length': String(Buffer.byteLength(d.payload)) }),
      },
    });
    if (next.nextAttemptAtMs !== null) wakeAt(next.nextAttemptAtMs);
  }

  /** The secrets that sign an attempt at `nowMs`: the current one, and the previous one until it expires. */
  function liveSecrets(d: ClaimedDelivery, nowMs: number): [string, ...string[]] {
    const old = d.previous_secret;
    return old !== null && d.previous_secret_expires_at !== null && d.previous_secret_expires_at > isoAt(nowMs)
      ? [d.secret, old]
      : [d.secret];
  }

  /** Wakes the worker when this process's own retry falls due (others' retries: the poll). */
  function wakeAt(atMs: number): void {
    if (!running || (dueTimer && dueTimer.at <= atMs)) return;
    if (dueTimer) clearTimeout(dueTimer.timer);
    const timer = setTimeout(
      () => {
        dueTimer = undefined;
        schedule();
      },
      Math.max(0, atMs - clock.now()),
    );
    timer.unref();
    dueTimer = { at: atMs, timer };
  }

  /** Waits for the attempts in flight, then writes their outcomes. */
  async function settle(): Promise<void> {
    while (cycling || inflight.size > 0 || results.length > 0) {
      await cycling;
      await Promise.allSettled([...inflight.values()]);
      await runCycle();
    }
  }

  return {
    workerId,
    stats,
    /** Starts claiming: now, whenever deliveries are signalled, and every WEBHOOK_POLL_MS. */
    start(): void {
      if (running) return;
      running = true;
      stopping = false;
      unsubscribe = deps.deliveriesDue?.subscribe(schedule);
      pollTimer = setInterval(schedule, config.WEBHOOK_POLL_MS);
      pollTimer.unref();
      schedule();
    },
    /** Wakes the worker now (e.g. on a notification from another process, Storage.listen). */
    wake(): void {
      if (running) schedule();
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
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((r) => {
        timer = setTimeout(r, graceMs);
      });
      await Promise.race([settle(), grace]);
      clearTimeout(timer);
      // Whatever finished within the grace period is written; the rest keeps its lease.
      await runCycle();
    },
    /** One claim cycle without starting the loop, then waits for its attempts and writes them (tests). */
    async runOnce(): Promise<number> {
      const before = stats.claimed;
      running = true;
      try {
        await runCycle();
      } finally {
        running = false;
      }
      await settle();
      return stats.claimed - before;
    },
    /** Resolves when nothing is in flight and every outcome is written. */
    idle: settle,
  };
}
export type DeliveryWorker = ReturnType<typeof createDeliveryWorker>;
