import { createRequire } from 'node:module';
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { Redis } from 'ioredis';
import { epochCommands, keysEpochKeys } from '../keys-epoch.js';
import { AppError } from '../lib/errors.js';
import { type Principal, principalId } from '../lib/principal.js';
import type { RedisGuard } from '../redis.js';
import { confirmCachedKey } from './auth.js';

export interface RateLimitOptions {
  live: number;
  test: number;
  windowS: number;
  /** Shared counters for many processes (docs/api.md#rate-limits); without it, counters live in this process. */
  redis?: { client: Redis; guard: RedisGuard };
  /** Redis key prefix; tests give each app its own so runs never collide. */
  nameSpace?: string;
  /** Prefix of the shared key-cache epoch (src/keys-epoch.ts) that the counting call also returns (REDIS_KEY_PREFIX). */
  keysEpochPrefix?: string;
}

/**
 * docs/api.md#rate-limits: per-key fixed window, X-RateLimit-* on every authenticated response, 429 with
 * Retry-After. A route hook on every route with a scope, so it runs after the authentication hook
 * has set the principal; routes without one (health, docs, 404/405) are not limited.
 *
 * Performance (docs/performance.md): the counting is @fastify/rate-limit's own stores (in process,
 * or Redis behind the breaker); the hook is ours, in callback style. The plugin's hook awaited six
 * promises per request (key, allow list, max, window, the count, the hook itself) for what is one
 * synchronous count in process.
 */
export async function installRateLimit(app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  const store: Store = opts.redis
    ? failOpenStore(opts.redis, opts.nameSpace ?? 'wsvc:rl:', opts.keysEpochPrefix ?? 'wsvc:')
    : new LocalStore(false, false, LOCAL_KEYS);
  const windowMs = opts.windowS * 1000;
  const exceeded = (max: number, retryS: number) =>
    new AppError(
      429,
      'rate_limited',
      `Rate limit of ${max} requests per ${opts.windowS} s exceeded for this API key; retry after ${retryS} s.`,
    );

  const limit: onRequestHookHandler = (request, reply, done) => {
    const principal = request.principal;
    const max = principal?.env === 'test' ? opts.test : opts.live;
    store.incr(
      rateKey(principal),
      (err, result) => {
        // A cached key is confirmed by the epoch of this same call before anything is answered (auth.ts).
        if (request.keyToConfirm === null) return counted(err, result);
        confirmCachedKey(request, result?.epoch, (failed) => (failed ? done(failed) : counted(err, result)));
      },
      windowMs,
      max,
    );
    function counted(err: Error | null, result: Counted | undefined): void {
      // A store error never refuses a request (fail-open, docs/operations.md).
      if (err || !result) {
        done();
        return;
      }
      const resetS = Math.ceil(result.ttl / 1000);
      reply.header('x-ratelimit-limit', max);
      reply.header('x-ratelimit-reset', resetS);
      if (result.current <= max) {
        reply.header('x-ratelimit-remaining', max - result.current);
        done();
        return;
      }
      reply.header('x-ratelimit-remaining', 0);
      reply.header('retry-after', resetS);
      done(exceeded(max, resetS));
    }
  };

  app.addHook('onRoute', (route) => {
    if (!route.config?.scope) return;
    const own =
      route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    route.onRequest = [...own, limit];
  });
}

/** Keys counted in one process's store before the least recently used is dropped (the plugin's default). */
const LOCAL_KEYS = 5000;

/** A count; from Redis also the shared key-cache epoch (null while unsettled), src/keys-epoch.ts. */
interface Counted {
  current: number;
  ttl: number;
  epoch?: string | null;
}
type OnCount = (err: Error | null, result?: Counted) => void;
/** The plugin's store contract as its code calls it (its typings omit the window and the max). */
interface Store {
  incr(key: string, cb: OnCount, timeWindow: number, max: number): void;
}
type StoreCtor = new (...args: unknown[]) => Store;
// The plugin's own stores (plain CommonJS files of the package, which has no `exports` map).
const require = createRequire(import.meta.url);
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as StoreCtor;

/**
 * Counters in Redis while the guard says it answers; in this process while it does not (the
 * limits then hold per process). A command that fails or times out opens the guard, so only
 * the requests already waiting on Redis pay its timeout, not every request of the outage.
 */
function failOpenStore(redis: { client: Redis; guard: RedisGuard }, nameSpace: string, epochPrefix: string): Store {
  const { guard } = redis;
  const shared = sharedStore(redis.client, nameSpace, epochPrefix);
  const local: Store = new LocalStore(false, false, LOCAL_KEYS);
  // The plugin's LocalStore hands out its live entry; copied, so concurrent requests each see their own count.
  const countLocally = (key: string, cb: OnCount, timeWindow: number, max: number) =>
    local.incr(key, (err, r) => cb(err, r && { current: r.current, ttl: r.ttl }), timeWindow, max);
  return {
    incr(key, cb, timeWindow, max) {
      if (!guard.usable()) return countLocally(key, cb, timeWindow, max);
      shared.incr(
        key,
        (err, result) => {
          if (!err) return cb(null, result);
          guard.failed(err);
          countLocally(key, cb, timeWindow, max);
        },
        timeWindow,
        max,
      );
    },
  };
}

/**
 * @fastify/rate-limit's RedisStore count (fixed window) in a script of ours that also returns the
 * shared key-cache epoch: one round trip for both (src/keys-epoch.ts, docs/performance.md).
 */
function sharedStore(client: Redis, nameSpace: string, epochPrefix: string): Store {
  const cmd = epochCommands(client);
  const { epoch, unsettled } = keysEpochKeys(epochPrefix);
  return {
    incr(key, cb, timeWindow) {
      cmd.wsvcCountAndEpoch(nameSpace + key, epoch, unsettled, timeWindow).then(
        ([current, ttl, at]) => cb(null, { current, ttl, epoch: at ?? null }),
        (err: Error) => cb(err),
      );
    },
  };
}

/** The counter of a caller: an API key's id (as before principals had kinds), else the principal's id. */
function rateKey(p: Principal | null): string {
  if (!p) return 'anonymous';
  return p.kind === 'api_key' ? p.keyId : principalId(p);
}
