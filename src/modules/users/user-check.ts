import type { Db, Dialect } from '../../db/dialect.js';
import type { SystemActor, SystemPrincipal } from '../../kernel/principal.js';
import type { Role } from '../../kernel/roles.js';
import { type PrincipalCheck, userLock } from '../auth/write-runner.js';
import { usersRepository } from './users.repository.js';

/** The write-time check of a system principal or actor: a user it acts for must still be a member. */
export function systemCheck(dialect: Dialect): PrincipalCheck<SystemPrincipal | SystemActor> {
  return async (trx, p) => {
    if (p.userId === null) return true;
    await dialect.holdShared(trx, [userLock(p.userId)]);
    return usersRepository.isMember(trx, p.userId);
  };
}

/**
 * The write runner's `roleOf`: a current member's role, read after the principal's check has taken the user's
 * revocation lock (a role change holds it exclusive after its update, so one that commits first is seen).
 */
export async function memberRole(trx: Db, userId: string): Promise<Role | undefined> {
  const row = await usersRepository.find(trx, userId);
  return row && row.removed_at === null ? row.role : undefined;
}
