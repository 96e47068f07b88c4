import type { Dialect } from '../../db/dialect.js';
import type { ApiKeyPrincipal, SystemPrincipal } from '../../lib/principal.js';
import type { PrincipalCheck } from '../auth/write-runner.js';
import { usersRepository } from '../users/users.repository.js';
import { keysRepository } from './keys.repository.js';

/** Revocation lock names: a write holds its credentials' shared, a revocation one exclusive. */
export const keyLock = (keyId: string) => `key:${keyId}`;
export const userLock = (userId: string) => `user:${userId}`;

/**
 * The write-time check of an API key: not revoked, owner not removed (D12, D9). The shared locks
 * make a revocation wait only for writes already past this point, and every later write see it.
 */
export function apiKeyCheck(dialect: Dialect): PrincipalCheck<ApiKeyPrincipal> {
  return async (trx, p) => {
    await dialect.holdShared(trx, [keyLock(p.keyId), userLock(p.userId)]);
    return keysRepository.isActive(trx, p.keyId);
  };
}

/** The write-time check of a system principal: a user it acts for must still be a member. */
export function systemCheck(dialect: Dialect): PrincipalCheck<SystemPrincipal> {
  return async (trx, p) => {
    if (p.userId === null) return true;
    await dialect.holdShared(trx, [userLock(p.userId)]);
    return usersRepository.isMember(trx, p.userId);
  };
}
