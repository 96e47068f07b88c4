import type { Dialect } from '../../db/dialect.js';
import type { SystemActor, SystemPrincipal } from '../../kernel/principal.js';
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
