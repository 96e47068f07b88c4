import type { Redis } from 'ioredis';
import type { KeyChangeAnnouncer } from '../../db/dialect.js';
import type { RedisGuard } from '../../db/redis.js';

/**
 * The key-cache epoch that API processes on PostgreSQL share in Redis (ARCHITECTURE.md, "Revocation";
 * docs/performance.md#the-key-cache-and-its-epochs). A process reuses a verified key while the epoch it was filed under is still
 * the current one; the rate-limit script returns the current epoch in the same round trip as the count.
 *
 * A write that may change keys or users `unsettle`s before it begins (the epoch moves on and an
 * "unsettled" counter, with a time to live, is raised) and `settle`s after it ends (the epoch moves on
 * again, the counter drops). While the counter is up the epoch reads as none: keys are read from the
 * database and not cached. So once a revocation may have committed, no cached entry is current, and
 * an entry read before its commit is stale by the settle; a writer that dies before it settles leaves
 * the counter to expire, after which entries are filed anew under an epoch no old entry has.
 *
 * The epoch starts at Redis's clock in microseconds, so a Redis that lost its data starts with a value
 * that no process has cached.
 */
export interface KeysEpochKeys {
  epoch: string;
  unsettled: string;
}

/** The Redis keys of the epoch for a deployment's prefix (REDIS_KEY_PREFIX). */
export function keysEpochKeys(prefix: string): KeysEpochKeys {
  return { epoch: `${prefix}keys:epoch`, unsettled: `${prefix}keys:unsettled` };
}

/**
 * Lua: the current epoch in `epoch` (created from Redis's clock if missing), or false while unsettled;
 * KEYS[2] is the epoch and KEYS[3] the unsettled mark. Also the end of the rate limit's one call
 * (http/rate-limit.ts), which returns the epoch beside the count.
 */
export const READ_EPOCH = `
local epoch = redis.call('GET', KEYS[2])
if not epoch then
  local t = redis.call('TIME')
  redis.call('SET', KEYS[2], t[1] .. string.format('%06d', t[2]), 'NX')
  epoch = redis.call('GET', KEYS[2])
end
if redis.call('EXISTS', KEYS[3]) == 1 then epoch = false end
`;

/** Lua (KEYS: unused, epoch, unsettled): the epoch alone. */
const EPOCH_ONLY = `${READ_EPOCH}
return epoch`;

/** Lua (KEYS: epoch, unsettled; ARGV: unsettled time to live ms). */
const UNSETTLE = `
if not redis.call('GET', KEYS[1]) then
  local t = redis.call('TIME')
  redis.call('SET', KEYS[1], t[1] .. string.format('%06d', t[2]), 'NX')
end
redis.call('INCR', KEYS[1])
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1
`;

const SETTLE = `
redis.call('INCR', KEYS[1])
if redis.call('DECR', KEYS[2]) <= 0 then redis.call('DEL', KEYS[2]) end
return 1
`;

/** How long an unsettled mark outlives a writer that died before it settled. */
const UNSETTLED_TTL_MS = 30_000;

interface EpochCommands {
  wsvcKeysEpoch(k1: string, k2: string, k3: string): Promise<string | null>;
  wsvcKeysUnsettle(k1: string, k2: string, ttlMs: number): Promise<number>;
  wsvcKeysSettle(k1: string, k2: string): Promise<number>;
}

/** Defines the scripts on a client once (ioredis sends EVALSHA, and the script only when Redis lacks it). */
function epochCommands(redis: Redis): EpochCommands {
  const r = redis as Redis & Partial<EpochCommands>;
  if (!r.wsvcKeysEpoch) {
    redis.defineCommand('wsvcKeysEpoch', { numberOfKeys: 3, lua: EPOCH_ONLY });
    redis.defineCommand('wsvcKeysUnsettle', { numberOfKeys: 2, lua: UNSETTLE });
    redis.defineCommand('wsvcKeysSettle', { numberOfKeys: 2, lua: SETTLE });
  }
  return r as Redis & EpochCommands;
}

/** The writers' side: announces writes that may change keys or users (set as `dialect.keyChanges`). */
export function keyChangeAnnouncer(redis: Redis, prefix: string): KeyChangeAnnouncer {
  const keys = keysEpochKeys(prefix);
  const cmd = epochCommands(redis);
  return {
    async unsettle() {
      await cmd.wsvcKeysUnsettle(keys.epoch, keys.unsettled, UNSETTLED_TTL_MS);
    },
    async settle() {
      await cmd.wsvcKeysSettle(keys.epoch, keys.unsettled);
    },
  };
}

/**
 * The readers' side: the current epoch, or null when it cannot be used (unsettled, or Redis not
 * answering: a failure opens the breaker). Null means "read the key from the database, cache nothing".
 */
export function readKeysEpoch(
  redis: { client: Redis; guard: RedisGuard },
  prefix: string,
): () => Promise<string | null> {
  const keys = keysEpochKeys(prefix);
  const cmd = epochCommands(redis.client);
  return async () => {
    if (!redis.guard.usable()) return null;
    try {
      return (await cmd.wsvcKeysEpoch(keys.epoch, keys.epoch, keys.unsettled)) ?? null;
    } catch (err) {
      redis.guard.failed(err);
      return null;
    }
  };
}
