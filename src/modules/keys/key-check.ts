import { sql } from 'kysely';
import type { Dialect } from '../../db/dialect.js';
import { type Param, prepared } from '../../db/prepared.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import type { ApiKeyPrincipal } from '../../kernel/principal.js';
import { keyLock, type PrincipalCheck, userLock } from '../../platform/unit-of-work.js';
import { keysRepository } from './keys.repository.js';

/** The same check as one statement (migration 026, PostgreSQL): locks, then reads, then raises WK401. */
const holdKeyQuery = prepared((db, $: Param<{ key: string; user: string; now: string }>) => ({
  compile: () => sql`select wsvc_hold_key(${$('key')}, ${$('user')}, ${$('now')})`.compile(db),
}));

/**
 * The write-time check of an API key: not revoked or expired, owner not removed (docs/api.md#keys-scopes-and-roles). The shared locks
 * make a revocation wait only for writes already past this point, and every later write see it. Where the
 * dialect defers statements (PostgreSQL) it is sent with the write's COMMIT (`wsvc_hold_key`, which raises
 * instead of answering false: the unit of work answers that as the credential ended).
 */
export function apiKeyCheck(dialect: Dialect, clock: Clock): PrincipalCheck<ApiKeyPrincipal> {
  return async (trx, p) => {
    if (dialect.defers) {
      await holdKeyQuery.later(trx, { key: p.keyId, user: p.userId, now: isoAt(clock.now()) });
      return true;
    }
    await dialect.holdShared(trx, [keyLock(p.keyId), userLock(p.userId)]);
    return keysRepository.isActive(trx, p.keyId, isoAt(clock.now()));
  };
}
