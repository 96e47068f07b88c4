import type { Env } from '../../db/types.js';
import type { Clock } from '../../kernel/clock.js';
import { BUCKET_COUNT, bucketOf } from './buckets.js';

/** One request to count: who, which route template, how it ended, how long it took. */
export interface UsageSample {
  workspaceId: string;
  env: Env;
  keyId: string;
  /** Method and route template, such as `GET /v1/resources/:id`. */
  route: string;
  status: number;
  latencyMs: number;
}

/** A 4xx/5xx answer to a key, for the request log (docs/usage.md#request-log). */
export interface FailedRequest {
  requestId: string;
  workspaceId: string;
  env: Env;
  keyId: string;
  userId: string;
  method: string;
  route: string;
  path: string;
  status: number;
  errorCode: string | null;
  errorMessage: string | null;
  latencyMs: number;
  /** Already redacted and cut to 8 KiB. */
  body: string | null;
  /** Epoch ms. */
  at: number;
}

/** Counts of one workspace, environment, key, route, status and minute. */
export interface UsageCell {
  workspaceId: string;
  env: Env;
  keyId: string;
  route: string;
  status: number;
  /** Epoch ms of the start of the minute. */
  minute: number;
  count: number;
  latencySumMs: number;
  buckets: number[];
}

/** What one flush writes, in one transaction. */
export interface UsageBatch {
  cells: UsageCell[];
  failures: FailedRequest[];
  /** Key id → the latest minute (epoch ms) it was used in. */
  lastUsed: Map<string, number>;
}

export interface MeterStats {
  flushes: number;
  failedFlushes: number;
  /** Age in ms of the oldest sample the last successful flush wrote. */
  lastFlushLagMs: number;
  droppedFailures: number;
}

export interface UsageMeter {
  /** Counts one request in memory (the request path: no I/O). */
  record(sample: UsageSample): void;
  /** Keeps one failed request for the next flush. */
  recordFailure(failure: FailedRequest): void;
  /** Writes what was counted since the last flush; a failed write keeps it for the next one. */
  flush(): Promise<void>;
  /** Flushes every `flushMs` until stopped. */
  start(): void;
  /** Stops the timer and flushes what is left (shutdown). */
  stop(): Promise<void>;
  readonly stats: MeterStats;
  /**
   * Billable requests of a workspace (live, status not 429 and below 500: docs/billing.md#billable-requests) counted by this meter
   * from minute `from` on and not yet committed by a flush (pending or being written).
   */
  unflushedBillable(workspaceId: string, from: number): number;
  /** Moves on at every flush this meter commits: what it counted before is in the database now. */
  readonly generation: () => number;
}

/** A billable request (docs/billing.md#billable-requests) is a live one answered with a status other than 429 and below 500. */
export function isBillable(env: string, status: number): boolean {
  return env === 'live' && status !== 429 && status < 500;
}

type Billable = Map<string, Map<number, number>>;
const addBillable = (into: Billable, ws: string, minute: number, n: number) => {
  let m = into.get(ws);
  if (m === undefined) {
    m = new Map();
    into.set(ws, m);
  }
  m.set(minute, (m.get(minute) ?? 0) + n);
};

/** Most failed requests held between flushes; beyond it the newest are dropped (and counted). */
const MAX_PENDING_FAILURES = 10_000;
const MINUTE_MS = 60_000;

/**
 * Aggregates requests in memory per workspace, environment, key, route, status and minute, and
 * writes them every `flushMs` through `write` (docs/usage.md): nothing is written on the request path.
 */
export function createUsageMeter(deps: {
  clock: Clock;
  flushMs: number;
  write(batch: UsageBatch): Promise<void>;
  onError?(err: unknown): void;
  /** Keeps the unflushed billable counts the free cap reads (PLAN_LIMITS=on); off: not kept, 0. */
  trackBillable?: boolean;
}): UsageMeter {
  const trackBillable = deps.trackBillable ?? false;
  let cells = new Map<string, UsageCell>();
  let failures: FailedRequest[] = [];
  let lastUsed = new Map<string, number>();
  let oldest = Number.POSITIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;
  // Billable counts per workspace and minute: counted since the last take, and being written.
  let billable: Billable = new Map();
  let writing: Billable = new Map();
  let generation = 0;
  const stats: MeterStats = { flushes: 0, failedFlushes: 0, lastFlushLagMs: 0, droppedFailures: 0 };

  const record = (s: UsageSample) => {
    const now = deps.clock.now();
    const minute = now - (now % MINUTE_MS);
    const id = `${s.workspaceId}|${s.env}|${s.keyId}|${s.status}|${minute}|${s.route}`;
    let cell = cells.get(id);
    if (cell === undefined) {
      cell = { ...s, minute, count: 0, latencySumMs: 0, buckets: new Array<number>(BUCKET_COUNT).fill(0) };
      cells.set(id, cell);
      if (now < oldest) oldest = now;
    }
    cell.count++;
    cell.latencySumMs += s.latencyMs;
    const b = bucketOf(s.latencyMs);
    cell.buckets[b] = (cell.buckets[b] ?? 0) + 1;
    if ((lastUsed.get(s.keyId) ?? 0) < minute) lastUsed.set(s.keyId, minute);
    if (trackBillable && isBillable(s.env, s.status)) addBillable(billable, s.workspaceId, minute, 1);
  };

  const take = (): { batch: UsageBatch; since: number } | null => {
    if (cells.size === 0 && failures.length === 0) return null;
    const batch = { cells: [...cells.values()], failures, lastUsed };
    const since = oldest;
    cells = new Map();
    failures = [];
    lastUsed = new Map();
    oldest = Number.POSITIVE_INFINITY;
    writing = billable;
    billable = new Map();
    return { batch, since };
  };

  // A write that failed goes back in, added to what came since, for the next flush.
  const putBack = (batch: UsageBatch, since: number) => {
    for (const c of batch.cells) {
      const id = `${c.workspaceId}|${c.env}|${c.keyId}|${c.status}|${c.minute}|${c.route}`;
      const cur = cells.get(id);
      if (cur === undefined) cells.set(id, c);
      else {
        cur.count += c.count;
        cur.latencySumMs += c.latencySumMs;
        for (let i = 0; i < BUCKET_COUNT; i++) cur.buckets[i] = (cur.buckets[i] ?? 0) + (c.buckets[i] ?? 0);
      }
    }
    const room = MAX_PENDING_FAILURES - failures.length;
    stats.droppedFailures += Math.max(0, batch.failures.length - room);
    failures = [...batch.failures.slice(0, Math.max(0, room)), ...failures];
    for (const [k, m] of batch.lastUsed) if ((lastUsed.get(k) ?? 0) < m) lastUsed.set(k, m);
    if (since < oldest) oldest = since;
    for (const [ws, byMinute] of writing) for (const [m, n] of byMinute) addBillable(billable, ws, m, n);
    writing = new Map();
  };

  const flushOnce = async () => {
    const taken = take();
    if (taken === null) return;
    try {
      await deps.write(taken.batch);
      writing = new Map();
      generation++;
      stats.flushes++;
      stats.lastFlushLagMs = Math.max(0, deps.clock.now() - taken.since);
    } catch (err) {
      stats.failedFlushes++;
      putBack(taken.batch, taken.since);
      throw err;
    }
  };

  // One flush at a time: a flush asked for while one runs waits for it, then writes what came since.
  const flush = async (): Promise<void> => {
    while (running) await running.catch(() => {});
    running = flushOnce();
    try {
      await running;
    } finally {
      running = null;
    }
  };

  return {
    record,
    recordFailure(f) {
      if (failures.length >= MAX_PENDING_FAILURES) {
        stats.droppedFailures++;
        return;
      }
      failures.push(f);
      if (f.at < oldest) oldest = f.at;
    },
    flush,
    start() {
      if (timer) return;
      timer = setInterval(() => flush().catch((err) => deps.onError?.(err)), deps.flushMs);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await flush();
    },
    stats,
    unflushedBillable(workspaceId, from) {
      let n = 0;
      for (const map of [billable, writing]) {
        const byMinute = map.get(workspaceId);
        if (byMinute) for (const [m, c] of byMinute) if (m >= from) n += c;
      }
      return n;
    },
    generation: () => generation,
  };
}
