import type { Db } from '../../db/dialect.js';
import type { SystemActor } from '../../kernel/principal.js';
import type { Role } from '../../kernel/roles.js';
import type { PrincipalCheck } from '../../platform/unit-of-work.js';
import { usersRepository } from './users.repository.js';

/**
 * The write-time check of a system actor (the CLI, the worker, the meter, a job): it acts for no user and holds no
 * credential that could end, so it passes; registering it is what lets the runner accept the kind (fail closed).
 */
export function systemCheck(): PrincipalCheck<SystemActor> {
  return async () => true;
}

/**
 * The unit of work's `roleOf`: a current member's role, read after the principal's check has taken the user's
 * revocation lock (a role change holds it exclusive after its update, so one that commits first is seen).
 */
export async function memberRole(trx: Db, userId: string): Promise<Role | undefined> {
  const row = await usersRepository.find(trx, userId);
  return row && row.removed_at === null ? row.role : undefined;
}
