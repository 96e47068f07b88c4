import type { Db, Dialect } from '../../db/dialect.js';
import type { Env, Role } from '../../db/types.js';
import { UnauthorizedError } from '../../lib/errors.js';
import { keysRepository } from './keys.repository.js';

/** Who is calling: the verified key, its owner's current role, and the data it may see (docs/api.md#keys-scopes-and-roles, #environments). */
export interface Actor {
  keyId: string;
  userId: string;
  workspaceId: string;
  env: Env;
  role: Role;
  scopes: readonly string[] | null;
}

/**
 * Runs a change in a write transaction that first re-reads the caller's key, so a key revoked
 * before the transaction commits changes nothing (docs/api.md#keys-scopes-and-roles). Throws 401 expired_token then. `fn` must not
 * write API keys or users' role or removal (those go through their services): such transactions
 * leave this process's cache of verified keys valid (docs/performance.md, change 4: keysEpoch).
 */
export function createWriteRunner(deps: { db: Db; dialect: Dialect }) {
  return async function writeAs<T>(actor: Actor, fn: (trx: Db) => Promise<T>): Promise<T> {
    return deps.dialect.writeTransaction(
      deps.db,
      async (trx) => {
        if (!(await keysRepository.isActive(trx, actor.keyId, deps.dialect.rowLocks))) {
          throw new UnauthorizedError('expired_token');
        }
        return fn(trx);
      },
      { keepsKeys: true },
    );
  };
}
export type WriteRunner = ReturnType<typeof createWriteRunner>;
