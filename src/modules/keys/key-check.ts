import type { Dialect } from '../../db/dialect.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import type { ApiKeyPrincipal } from '../../kernel/principal.js';
import { keyLock, type PrincipalCheck, userLock } from '../auth/write-runner.js';
import { keysRepository } from './keys.repository.js';

/**
 * The write-time check of an API key: not revoked or expired, owner not removed (docs/api.md#keys-scopes-and-roles). The shared locks
 * make a revocation wait only for writes already past this point, and every later write see it.
 */
export function apiKeyCheck(dialect: Dialect, clock: Clock): PrincipalCheck<ApiKeyPrincipal> {
  return async (trx, p) => {
    await dialect.holdShared(trx, [keyLock(p.keyId), userLock(p.userId)]);
    return keysRepository.isActive(trx, p.keyId, isoAt(clock.now()));
  };
}
