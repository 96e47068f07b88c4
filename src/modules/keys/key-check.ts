import type { Dialect } from '../../db/dialect.js';
import type { ApiKeyPrincipal } from '../../lib/principal.js';
import { keyLock, type PrincipalCheck, userLock } from '../auth/write-runner.js';
import { keysRepository } from './keys.repository.js';

/**
 * The write-time check of an API key: not revoked, owner not removed (docs/api.md#keys-scopes-and-roles). The shared locks
 * make a revocation wait only for writes already past this point, and every later write see it.
 */
export function apiKeyCheck(dialect: Dialect): PrincipalCheck<ApiKeyPrincipal> {
  return async (trx, p) => {
    await dialect.holdShared(trx, [keyLock(p.keyId), userLock(p.userId)]);
    return keysRepository.isActive(trx, p.keyId);
  };
}
