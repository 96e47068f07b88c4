import { Redis } from 'ioredis';

export interface RedisLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/**
 * Opens the shared Redis (REDIS_URL) used for rate-limit counters across API processes (docs/api.md#rate-limits).
 * Commands fail fast while Redis is down (no offline queue, one retry) so a request never waits
 * on it: the rate limiter then lets the request through (fail-open, docs/operations.md) and the
 * client reconnects in the background with a capped backoff. State changes are logged once.
 */
export function openRedis(url: string, log: RedisLog): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 1000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
  });
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    log.warn({ err: err.message }, 'redis unavailable: rate limits fail open until it returns');
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    log.info({}, 'redis reachable again: shared rate limits restored');
  });
  return redis;
}

/** 'ok' when commands can run now, else 'unavailable' (for /readyz). */
export function redisState(redis: Redis): 'ok' | 'unavailable' {
  return redis.status === 'ready' ? 'ok' : 'unavailable';
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
