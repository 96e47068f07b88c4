import { Redis } from 'ioredis';

export interface RedisLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * Opens the shared Redis (REDIS_URL) used for rate-limit counters across API processes
 * (docs/api.md#rate-limits).
 * Commands fail fast while Redis is down (no offline queue, one retry) and give up after
 * `commandTimeoutMs` when it hangs; the client reconnects in the background with a capped
 * backoff. Whether to send commands at all is `createRedisGuard`'s call.
 */
export function openRedis(url: string, opts: { commandTimeoutMs?: number } = {}): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: opts.commandTimeoutMs ?? 500,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  });
  // Connection errors are reported by the guard; without a listener they would crash the process.
  redis.on('error', () => {});
  return redis;
}

/** `ok`; `unavailable` (refused, closed, reconnecting); `not_responding` (connected, commands time out). */
export type RedisState = 'ok' | 'unavailable' | 'not_responding';

export interface RedisGuard {
  /** Whether a command may be sent now; false while the breaker is open or Redis is not connected. */
  usable(): boolean;
  state(): RedisState;
  /** Reports a failed command: opens the breaker until a probe succeeds. */
  failed(err: unknown): void;
  close(): void;
}

/**
 * A circuit breaker in front of Redis. The first failed or timed-out command opens it: from then
 * on callers skip Redis at once (the rate limiter counts in this process) instead of each paying
 * the command timeout, while one PING every `probeMs` checks whether Redis answers again.
 * One warning when an outage starts, one info line when it ends.
 */
export function createRedisGuard(redis: Redis, log: RedisLog, opts: { probeMs?: number } = {}): RedisGuard {
  const probeMs = opts.probeMs ?? 1000;
  let open: { state: Exclude<RedisState, 'ok'>; since: number } | null = null;
  let timer: NodeJS.Timeout | undefined;
  let probing = false;

  function trip(state: Exclude<RedisState, 'ok'>, err: unknown): void {
    if (open) {
      open.state = state;
      return;
    }
    open = { state, since: Date.now() };
    const reason = err instanceof Error ? err.message : String(err);
    log.warn({ err: reason, redis: state }, 'redis unavailable: rate limits count in this process until it returns');
    timer = setInterval(probe, probeMs);
    timer.unref();
  }

  function probe(): void {
    if (!open || probing || redis.status !== 'ready') return;
    probing = true;
    redis.ping().then(
      () => {
        probing = false;
        if (!open) return;
        const downMs = Date.now() - open.since;
        open = null;
        clearInterval(timer);
        log.info({ downMs }, 'redis reachable again: shared rate limits restored');
      },
      (err: unknown) => {
        probing = false;
        if (open) open.state = isTimeout(err) ? 'not_responding' : 'unavailable';
      },
    );
  }

  const onError = (err: Error) => trip('unavailable', err);
  redis.on('error', onError);
  redis.on('ready', probe);
  return {
    usable: () => open === null && redis.status === 'ready',
    state: () => open?.state ?? (redis.status === 'ready' ? 'ok' : 'unavailable'),
    failed(err) {
      trip(isTimeout(err) ? 'not_responding' : 'unavailable', err);
    },
    close() {
      clearInterval(timer);
      redis.off('error', onError);
      redis.off('ready', probe);
    },
  };
}

function isTimeout(err: unknown): boolean {
  return /timed out/i.test(err instanceof Error ? err.message : String(err));
}

/** Resolves once Redis is ready or after `ms` (the API starts either way: fail-open). */
export function waitForRedis(redis: Redis, ms = 2000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    }
    redis.once('ready', done);
  });
}
