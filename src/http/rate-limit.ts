import { createRequire } from 'node:module';
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Redis } from 'ioredis';
import type { RedisGuard } from '../db/redis.js';
import { AppError } from '../kernel/errors.js';
import { type Principal, principalId } from '../kernel/principal.js';
import { keysEpochKeys, READ_EPOCH } from '../modules/keys/keys-epoch.js';
import { confirmCachedKey } from './auth.js';

export interface RateLimitOptions {
  live: number;
  test: number;
  windowS: number;
  /** Shared counters for many processes (docs/api.md#rate-limits); without it, counters live in this process. */
  redis?: { client: Redis; guard: RedisGuard };
  /** Redis key prefix; tests give each app its own so runs never collide. */
  nameSpace?: string;
  /** Prefix of the shared key-cache epoch (src/modules/keys/keys-epoch.ts) that the counting call also returns (REDIS_KEY_PREFIX). */
  keysEpochPrefix?: string;
  /** The free cap's count, taken in the same Redis call when the cap knows the workspace (src/http/plan-cap.ts). */
  cap?: InlineCap;
}

/** A free-cap count to take in the rate limit's Redis call (docs/billing.md#the-free-cap). */
export interface CapTake {
  key: string;
  floor: number;
  limit: number;
  ttlMs: number;
}
export interface InlineCap {
  /**
   * The take as Lua, run in the rate limit's call when the rate limit lets the request through: it
   * reads KEYS[4] and ARGV[3..5] (`args`' key, floor, limit, time to live) and sets `cap` to 1
   * (taken) or 0 (refused at the cap). Defined beside the cap (http/plan-cap.ts).
   */
  lua: string;
  /** The count to take for this request, or null (no cap, or not known without reading). Synchronous. */
  args(request: FastifyRequest): CapTake | null;
  /** What the call did (taken, or refused at the cap): the error to answer with, if any. Not called when not tried. */
  result(request: FastifyRequest, key: string, taken: boolean): Error | undefined;
}

/**
 * docs/api.md#rate-limits: per-key fixed window, X-RateLimit-* on every authenticated response, 429 with
 * Retry-After. A route hook on every route with a scope, so it runs after the authentication hook
 * has set the principal; routes without one (health, docs, 404/405) are not limited.
 *
 * Performance (docs/performance.md#callback-style-hooks): the counting is @fastify/rate-limit's own stores (in process,
 * or Redis behind the breaker); the hook is ours, in callback style. The plugin's hook awaited six
 * promises per request (key, allow list, max, window, the count, the hook itself) for what is one
 * synchronous count in process.
 */
export async function installRateLimit(app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  const store: Store = opts.redis
    ? failOpenStore(opts.redis, opts.nameSpace ?? 'wsvc:rl:', opts.keysEpochPrefix ?? 'wsvc:', opts.cap?.lua)
    : new LocalStore(false, false, LOCAL_KEYS);
  const windowMs = opts.windowS * 1000;
  const exceeded = (max: number, retryS: number) =>
    new AppError(
      429,
      'rate_limited',
      `Rate limit of ${max} requests per ${opts.windowS} s exceeded for this API key; retry after ${retryS} s.`,
    );

  const cap = opts.redis ? opts.cap : undefined;
  const limit: onRequestHookHandler = (request, reply, done) => {
    const principal = request.principal;
    const max = principal?.env === 'test' ? opts.test : opts.live;
    const take = cap?.args(request) ?? undefined;
    store.incr(
      rateKey(principal),
      (err, result) => {
        // A cached key is confirmed by the epoch of this same call before anything is answered (auth.ts).
        if (request.keyToConfirm === null) return counted(err, result);
        confirmCachedKey(request, result?.epoch, (failed) => {
          if (!failed) return counted(err, result);
          // A take already made is kept on the request, so the answer settles it (plan-cap.ts).
          if (take && result?.cap === 1) cap?.result(request, take.key, true);
          done(failed);
        });
      },
      windowMs,
      max,
      take,
    );
    function counted(err: Error | null, result: Counted | undefined): void {
      // A store error never refuses a request (fail-open, docs/operations.md).
      if (err || !result) {
        done();
        return;
      }
      const capError =
        take && result.cap !== undefined && result.cap >= 0
          ? cap?.result(request, take.key, result.cap === 1)
          : undefined;
      const resetS = Math.ceil(result.ttl / 1000);
      reply.header('x-ratelimit-limit', max);
      reply.header('x-ratelimit-reset', resetS);
      if (result.current <= max) {
        reply.header('x-ratelimit-remaining', max - result.current);
        // The free cap's refusal (429 quota_exceeded) when its take, in this same call, found the cap reached.
        done(capError);
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

/** A count; from Redis also the shared key-cache epoch (null while unsettled), src/modules/keys/keys-epoch.ts. */
interface Counted {
  current: number;
  ttl: number;
  epoch?: string | null;
  /** The free cap's take in the same call: 1 taken, 0 refused, -1 not tried. */
  cap?: number;
}
type OnCount = (err: Error | null, result?: Counted) => void;
/** The plugin's store contract as its code calls it (its typings omit the window and the max). */
interface Store {
  incr(key: string, cb: OnCount, timeWindow: number, max: number, cap?: CapTake): void;
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
function failOpenStore(
  redis: { client: Redis; guard: RedisGuard },
  nameSpace: string,
  epochPrefix: string,
  capLua: string | undefined,
): Store {
  const { guard } = redis;
  const shared = sharedStore(redis.client, nameSpace, epochPrefix, capLua);
  const local: Store = new LocalStore(false, false, LOCAL_KEYS);
  // The plugin's LocalStore hands out its live entry; copied, so concurrent requests each see their own count.
  const countLocally = (key: string, cb: OnCount, timeWindow: number, max: number) =>
    local.incr(key, (err, r) => cb(err, r && { current: r.current, ttl: r.ttl }), timeWindow, max);
  return {
    incr(key, cb, timeWindow, max, cap) {
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
        cap,
      );
    },
  };
}

/**
 * Lua (KEYS[1]: the counter; ARGV[1]: window ms): @fastify/rate-limit's RedisStore count (fixed
 * window, no continueExceeding, no back-off). The rate limit's call adds the key-cache epoch
 * (KEYS[2..3], keys-epoch.ts) and, when given, the free cap's take (`InlineCap.lua`).
 */
const COUNT = `
local current = redis.call('INCR', KEYS[1])
local ttl = tonumber(ARGV[1])
if current == 1 then redis.call('PEXPIRE', KEYS[1], ttl) else ttl = redis.call('PTTL', KEYS[1]) end
`;

interface CountCommands {
  wsvcCountAndEpoch(k1: string, k2: string, k3: string, windowMs: number): Promise<[number, number, string?]>;
  wsvcCountEpochAndCap(
    k1: string,
    k2: string,
    k3: string,
    capKey: string,
    windowMs: number,
    max: number,
    floor: number,
    cap: number,
    capTtlMs: number,
  ): Promise<[number, number, number, string?]>;
}

/** Defines the counting scripts on a client once (ioredis sends EVALSHA, and the script only when Redis lacks it). */
function countCommands(redis: Redis, capLua: string | undefined): CountCommands {
  const r = redis as Redis & Partial<CountCommands>;
  if (!r.wsvcCountAndEpoch) {
    redis.defineCommand('wsvcCountAndEpoch', {
      numberOfKeys: 3,
      lua: `${COUNT}${READ_EPOCH}\nreturn {current, ttl, epoch}`,
    });
  }
  if (capLua && !r.wsvcCountEpochAndCap) {
    // ARGV[2]: the rate limit's max; the cap is tried only for a request the rate limit lets through.
    redis.defineCommand('wsvcCountEpochAndCap', {
      numberOfKeys: 4,
      lua: `${COUNT}local cap = -1\nif current <= tonumber(ARGV[2]) then\n${capLua}\nend\n${READ_EPOCH}\nreturn {current, ttl, cap, epoch}`,
    });
  }
  return r as Redis & CountCommands;
}

/**
 * @fastify/rate-limit's RedisStore count (fixed window) in a script of ours that also returns the
 * shared key-cache epoch: one round trip for both (src/modules/keys/keys-epoch.ts, docs/performance.md#the-key-cache-and-its-epochs).
 */
function sharedStore(client: Redis, nameSpace: string, epochPrefix: string, capLua: string | undefined): Store {
  const cmd = countCommands(client, capLua);
  const { epoch, unsettled } = keysEpochKeys(epochPrefix);
  return {
    incr(key, cb, timeWindow, max, cap) {
      if (cap) {
        cmd
          .wsvcCountEpochAndCap(
            nameSpace + key,
            epoch,
            unsettled,
            cap.key,
            timeWindow,
            max,
            cap.floor,
            cap.limit,
            cap.ttlMs,
          )
          .then(
            ([current, ttl, taken, at]) => cb(null, { current, ttl, cap: taken, epoch: at ?? null }),
            (err: Error) => cb(err),
          );
        return;
      }
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
