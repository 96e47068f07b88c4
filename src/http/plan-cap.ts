import type { FastifyInstance, FastifyRequest, onResponseHookHandler, preHandlerHookHandler } from 'fastify';
import type { Redis } from 'ioredis';
import type { RedisGuard } from '../db/redis.js';
import type { Clock } from '../kernel/clock.js';
import { AppError } from '../kernel/errors.js';
import type { BillingService } from '../modules/billing/billing.service.js';
import type { UsageMeter } from '../modules/usage/meter.js';
import { isBillable } from '../modules/usage/meter.js';
import type { CapTake, InlineCap } from './rate-limit.js';

interface CapEntry {
  limit: number | null;
  periodStart: number;
  periodEnd: number;
  /** Billable requests in the database when read. */
  base: number;
  /** The meter's generation when the read began: the base is current while it has not moved. */
  generation: number;
  readAt: number;
}

/**
 * Lua (KEYS: the workspace's count for the period; ARGV: floor, limit, time to live ms, check 1|0).
 * The count is raised to `floor` (the billable count the database held when this process last read
 * it: a lower bound of the true count) if it is below it or missing, which seeds a new key and heals
 * one that lost counts (Redis restarted, or down while processes counted alone). Then, with `check`,
 * a count that has reached `limit` is refused ({0, count}); otherwise it is raised by one ({1, count}).
 * Atomic in Redis, so processes answering at the same moment cannot both take the last request.
 */
const CAP_TAKE = `
local n = tonumber(redis.call('GET', KEYS[1]) or '-1')
local floor = tonumber(ARGV[1])
if n < floor then
  redis.call('SET', KEYS[1], floor, 'PX', ARGV[3])
  n = floor
end
if ARGV[4] == '1' and n >= tonumber(ARGV[2]) then return {0, n} end
return {1, redis.call('INCR', KEYS[1])}
`;

/**
 * Lua: the same take inside the rate limit's Redis call (`InlineCap.lua`, http/rate-limit.ts), for a
 * request the rate limit lets through: KEYS[4] the count, ARGV[3..5] floor, limit, time to live ms;
 * sets `cap` to 1 (taken) or 0 (refused at the limit).
 */
const CAP_TAKE_INLINE = `
local n = tonumber(redis.call('GET', KEYS[4]) or '-1')
local floor = tonumber(ARGV[3])
if n < floor then
  redis.call('SET', KEYS[4], floor, 'PX', ARGV[5])
  n = floor
end
if n >= tonumber(ARGV[4]) then cap = 0 else redis.call('INCR', KEYS[4]); cap = 1 end
`;

/** Lua (KEYS: the count): gives back a request that turned out not billable (429, 5xx). */
const CAP_GIVE_BACK = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('DECR', KEYS[1]) end
return 0
`;

interface CapCommands {
  wsvcCapTake(key: string, floor: number, limit: number, ttlMs: number, check: 1 | 0): Promise<[number, number]>;
  wsvcCapGiveBack(key: string): Promise<number>;
}

function capCommands(redis: Redis): CapCommands {
  const r = redis as Redis & Partial<CapCommands>;
  if (!r.wsvcCapTake) {
    redis.defineCommand('wsvcCapTake', { numberOfKeys: 1, lua: CAP_TAKE });
    redis.defineCommand('wsvcCapGiveBack', { numberOfKeys: 1, lua: CAP_GIVE_BACK });
  }
  return r as Redis & CapCommands;
}

/** A count key outlives its period by a day (a request checked at the end still finds it). */
const KEY_GRACE_MS = 86_400_000;

/**
 * The free plan's hard cap (docs/billing.md#the-free-cap): a live request to a workspace whose
 * billable requests this period have reached its plan's cap is answered 429 quota_exceeded with
 * Retry-After to the period's end. No database write on the request path.
 *
 * With Redis (`redis`, the PostgreSQL + Redis deployment) the count is shared by every API process:
 * one key per workspace and period, taken atomically before the handler (only for workspaces whose
 * plan has a cap; in the rate limit's own Redis call when this process knows the workspace's cap
 * without reading, else in a call of its own after the read) and given back when the answer turns out not billable (429, 5xx);
 * a billable answer that never reached the check (a 400 from validation, a 403 from a scope) is added
 * when it is sent. While Redis is unusable (the breaker is open) and without Redis, the count is the
 * per-process one: what the database held at the last read (re-read after each flush of this
 * process's meter, and at least every `refreshMs` to see other processes' flushes) plus what this
 * process's meter has not written yet.
 */
export function createPlanCap(deps: {
  billing: Pick<BillingService, 'capOf'>;
  meter: UsageMeter;
  clock: Clock;
  refreshMs: number;
  redis?: { client: Redis; guard: RedisGuard };
  /** Prefix of the shared counts (REDIS_KEY_PREFIX). */
  keyPrefix?: string;
  /** The console's billing page of a workspace, named by a 402 payment_required. */
  billingPage?: (workspaceId: string) => string;
  /**
   * Payments with Stripe are on: a key whose workspace's subscription is unpaid (read with the key, so that a change of
   * it reaches every process at once, as a revocation does) answers 402 payment_required on live requests.
   */
  payments?: boolean;
  /** Plan limits are on (PLAN_LIMITS): the free cap is counted. Off, only the payment check runs (no read, no count). */
  limits?: boolean;
}): { inline: InlineCap; install(app: FastifyInstance): void } {
  const limits = deps.limits ?? true;
  const cache = new Map<string, CapEntry>();
  const reading = new Map<string, Promise<CapEntry | null>>();
  const shared = deps.redis ? { ...deps.redis, cmd: capCommands(deps.redis.client) } : undefined;
  const prefix = `${deps.keyPrefix ?? 'wsvc:'}cap:`;
  /** Requests whose billable request was taken from the shared count: the key to give back to. */
  const taken = new WeakMap<FastifyRequest, string>();
  const keyOf = (workspaceId: string, entry: CapEntry) => `${prefix}${workspaceId}:${entry.periodStart}`;
  const stale = (entry: CapEntry | undefined, now: number): entry is undefined =>
    !entry ||
    now >= entry.periodEnd ||
    entry.generation !== deps.meter.generation() ||
    now - entry.readAt >= deps.refreshMs;

  // The take rides in the rate limit's Redis call (one round trip for both) whenever this process
  // knows the workspace's cap without reading; otherwise the check below makes its own call.
  const inline: InlineCap = {
    lua: CAP_TAKE_INLINE,
    args(request): CapTake | null {
      const p = request.principal;
      if (!limits || p?.kind !== 'api_key' || p.env !== 'live') return null;
      const now = deps.clock.now();
      const entry = cache.get(p.workspaceId);
      if (stale(entry, now) || entry.limit === null || (deps.payments && p.unpaid)) return null;
      const ttlMs = entry.periodEnd - now + KEY_GRACE_MS;
      return { key: keyOf(p.workspaceId, entry), floor: entry.base, limit: entry.limit, ttlMs };
    },
    result(request, key, ok) {
      if (ok) {
        taken.set(request, key);
        return undefined;
      }
      const p = request.principal;
      const entry = p?.kind === 'api_key' ? cache.get(p.workspaceId) : undefined;
      return entry ? refuse(entry, deps.clock.now()) : undefined;
    },
  };

  const read = (workspaceId: string, now: number): Promise<CapEntry | null> => {
    let p = reading.get(workspaceId);
    if (p) return p;
    const generation = deps.meter.generation();
    p = deps.billing
      .capOf(workspaceId, now)
      .then((c) => {
        if (!c) return null;
        const entry: CapEntry = { ...c, base: c.billable, generation, readAt: now };
        cache.set(workspaceId, entry);
        return entry;
      })
      .finally(() => reading.delete(workspaceId));
    reading.set(workspaceId, p);
    return p;
  };

  const refuse = (entry: CapEntry, now: number) => {
    const retryAfter = Math.max(1, Math.ceil((entry.periodEnd - now) / 1000));
    return new AppError(
      429,
      'quota_exceeded',
      `This workspace has used the ${entry.limit} live requests its plan allows this period; the period ends at ${new Date(entry.periodEnd).toISOString()}. Move to a larger plan to continue.`,
      undefined,
      { 'retry-after': String(retryAfter) },
    );
  };

  const paymentRequired = (workspaceId: string) =>
    new AppError(
      402,
      'payment_required',
      `This workspace's last invoice could not be charged: live requests are refused until an invoice is paid. An admin can add a card on the console's billing page (${deps.billingPage?.(workspaceId) ?? `/console/w/${workspaceId}/live/settings/billing`}); test keys and the console keep working.`,
    );

  /** The check with the workspace's entry in hand; a promise only when it asks Redis. */
  const checkWith = (request: FastifyRequest, entry: CapEntry | undefined, now: number): Promise<void> | undefined => {
    if (!entry || entry.limit === null) return undefined;
    const p = request.principal as Extract<FastifyRequest['principal'], { kind: 'api_key' }>;
    if (shared?.guard.usable()) {
      const key = keyOf(p.workspaceId, entry);
      return shared.cmd.wsvcCapTake(key, entry.base, entry.limit, entry.periodEnd - now + KEY_GRACE_MS, 1).then(
        ([ok]) => {
          if (!ok) throw refuse(entry, now);
          taken.set(request, key);
        },
        (err: unknown) => {
          // Redis failed: the breaker opens and this request is checked the per-process way.
          shared.guard.failed(err);
          return perProcess(p.workspaceId, entry, now);
        },
      );
    }
    return perProcess(p.workspaceId, entry, now);
  };
  const perProcess = (workspaceId: string, entry: CapEntry, now: number): undefined => {
    const used = entry.base + deps.meter.unflushedBillable(workspaceId, entry.periodStart);
    if (used >= (entry.limit ?? Number.POSITIVE_INFINITY)) throw refuse(entry, now);
    return undefined;
  };

  // Performance (docs/performance.md#callback-style-hooks): a callback hook, answered
  // without a promise when the workspace's entry is fresh and no Redis call is needed (every request of
  // a plan without a cap, and every request without Redis).
  const check: preHandlerHookHandler = (request, _reply, done) => {
    const p = request.principal;
    // Already taken in the rate limit's call (a refusal there answered before validation).
    if (p?.kind !== 'api_key' || p.env !== 'live' || taken.has(request)) return done();
    if (deps.payments && p.unpaid) return done(paymentRequired(p.workspaceId));
    if (!limits) return done();
    const now = deps.clock.now();
    const entry = cache.get(p.workspaceId);
    let pending: Promise<void> | undefined;
    try {
      pending = stale(entry, now)
        ? read(p.workspaceId, now).then((fresh) => checkWith(request, fresh ?? undefined, now))
        : checkWith(request, entry, now);
    } catch (err) {
      return done(err as Error);
    }
    if (pending === undefined) return done();
    pending.then(() => done(), done);
  };

  // Keeps the shared count equal to the billable answers (docs/billing.md#billable-requests: live, not 429, below 500), on the
  // routes the usage meter counts (those with a scope).
  const settle: onResponseHookHandler = (request, reply, done) => {
    if (!shared) return done();
    const p = request.principal;
    const live = p?.kind === 'api_key' && p.env === 'live';
    const billable = live && isBillable('live', reply.statusCode);
    const key = taken.get(request);
    if (key !== undefined && !billable) {
      // Taken, then answered 429 or 5xx (or the cached key turned out revoked): not billable.
      if (shared.guard.usable()) shared.cmd.wsvcCapGiveBack(key).catch((err: unknown) => shared.guard.failed(err));
    } else if (key === undefined && billable && p?.kind === 'api_key') {
      // Billable but never checked (a 400 from validation, a 403 from a scope): counted all the same.
      const entry = cache.get(p.workspaceId);
      const now = deps.clock.now();
      if (entry && entry.limit !== null && now < entry.periodEnd && shared.guard.usable()) {
        shared.cmd
          .wsvcCapTake(keyOf(p.workspaceId, entry), entry.base, entry.limit, entry.periodEnd - now + KEY_GRACE_MS, 0)
          .catch((err: unknown) => shared.guard.failed(err));
      }
    }
    done();
  };
  return {
    inline,
    install(app) {
      app.addHook('preHandler', check);
      if (!shared || !limits) return;
      app.addHook('onRoute', (route) => {
        if (!route.config?.scope) return;
        const own =
          route.onResponse === undefined ? [] : Array.isArray(route.onResponse) ? route.onResponse : [route.onResponse];
        route.onResponse = [...own, settle];
      });
    },
  };
}
