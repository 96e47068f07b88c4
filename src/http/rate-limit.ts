import { createRequire } from 'node:module';
import rateLimit, { type FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { AppError } from '../lib/errors.js';
import { type Principal, principalId } from '../lib/principal.js';
import type { RedisGuard } from '../redis.js';

export interface RateLimitOptions {
  live: number;
  test: number;
  windowS: number;
  /** Shared counters for many processes (docs/api.md#rate-limits); without it, counters live in this process. */
  redis?: { client: Redis; guard: RedisGuard };
  /** Redis key prefix; tests give each app its own so runs never collide. */
  nameSpace?: string;
}

/**
 * docs/api.md#rate-limits: per-key fixed window, X-RateLimit-* on every authenticated response, 429 with
 * Retry-After. Runs as a route hook, so after the authentication hook has set the principal.
 */
export async function installRateLimit(app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    timeWindow: opts.windowS * 1000,
    max: (request) => (request.principal?.env === 'test' ? opts.test : opts.live),
    keyGenerator: (request) => rateKey(request.principal),
    // Routes without a scope (health, docs, 404/405) are not rate limited.
    allowList: (request) => !request.routeOptions.config?.scope,
    store: opts.redis
      ? (failOpenStore(opts.redis, opts.nameSpace ?? 'wsvc:rl:') as unknown as FastifyRateLimitStoreCtor)
      : undefined,
    // A store error never refuses a request (fail-open, docs/operations.md).
    skipOnError: true,
    addHeadersOnExceeding: {
      'x-ratelimit-limit': true,
      'x-ratelimit-remaining': true,
      'x-ratelimit-reset': true,
    },
    addHeaders: {
      'x-ratelimit-limit': true,
      'x-ratelimit-remaining': true,
      'x-ratelimit-reset': true,
      'retry-after': true,
    },
    errorResponseBuilder: (_request, context) =>
      new AppError(
        429,
        'rate_limited',
        `Rate limit of ${context.max} requests per ${opts.windowS} s exceeded for this API key; retry after ${Math.ceil(context.ttl / 1000)} s.`,
      ),
  });
}

type Counted = (err: Error | null, result?: { current: number; ttl: number }) => void;
/** The plugin's store contract as its code calls it (its typings omit the window and the max). */
interface Store {
  incr(key: string, cb: Counted, timeWindow: number, max: number): void;
  child(routeOptions: unknown): Store;
}
type StoreCtor = new (...args: unknown[]) => Store;
// The plugin's own stores (plain CommonJS files of the package, which has no `exports` map).
const require = createRequire(import.meta.url);
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as StoreCtor;
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as StoreCtor;

/**
 * Counters in Redis while the guard says it answers; in this process while it does not (the
 * limits then hold per process). A command that fails or times out opens the guard, so only
 * the requests already waiting on Redis pay its timeout, not every request of the outage.
 */
function failOpenStore(redis: { client: Redis; guard: RedisGuard }, nameSpace: string) {
  const { guard } = redis;
  return class FailOpenStore implements Store {
    constructor(
      _params: unknown,
      private readonly shared: Store = new RedisStore(false, false, redis.client, nameSpace),
      private readonly local: Store = new LocalStore(false, false, 5000),
    ) {}

    incr(key: string, cb: Counted, timeWindow: number, max: number): void {
      if (!guard.usable()) {
        this.countLocally(key, cb, timeWindow, max);
        return;
      }
      this.shared.incr(
        key,
        (err, result) => {
          if (!err) return cb(null, result);
          guard.failed(err);
          this.countLocally(key, cb, timeWindow, max);
        },
        timeWindow,
        max,
      );
    }

    /** The plugin's LocalStore hands out its live entry; copied, so concurrent requests each see their own count. */
    private countLocally(key: string, cb: Counted, timeWindow: number, max: number): void {
      this.local.incr(key, (err, r) => cb(err, r && { current: r.current, ttl: r.ttl }), timeWindow, max);
    }

    child(routeOptions: unknown): Store {
      return new FailOpenStore(routeOptions, this.shared.child(routeOptions), this.local.child(routeOptions));
    }
  };
}

/** The counter of a caller: an API key's id (as before principals had kinds), else the principal's id. */
function rateKey(p: Principal | null): string {
  if (!p) return 'anonymous';
  return p.kind === 'api_key' ? p.keyId : principalId(p);
}
