import type { Db, Dialect } from '../../db/dialect.js';
import type { Env, Role } from '../../db/types.js';
import { AppError, UnauthorizedError } from '../../lib/errors.js';
import { keysRepository } from './keys.repository.js';

interface ActorBase {
  userId: string;
  workspaceId: string;
  env: Env;
  role: Role;
  /** The key's scopes (null: every scope); a console session has every scope its role allows. */
  scopes: readonly string[] | null;
}

/** A caller through /v1: the verified key, its owner's current role, and the data it may see (D9, D10). */
export interface KeyActor extends ActorBase {
  kind: 'api_key';
  keyId: string;
}

/** A person signed in to the console, acting in one workspace and environment (D25). */
export interface SessionActor extends ActorBase {
  kind: 'session';
  sessionId: string;
}

/** Who is calling: every service call takes one, whatever the transport. */
export type Actor = KeyActor | SessionActor;

/** The console's answer when its session has ended (sign-out, password change, expiry). */
export function sessionEndedError(): AppError {
  return new AppError(401, 'unauthenticated', 'Your console session has ended; sign in again.');
}

/** A stable id of the caller's credential (rate limits, logs). */
export function credentialId(actor: Actor): string {
  return actor.kind === 'api_key' ? actor.keyId : actor.sessionId;
}

/**
 * Runs a change in a write transaction that first re-checks the caller's credential, so a key
 * revoked (or a session ended, or its user removed) before the transaction commits changes nothing
 * (D12, D25). Throws 401 then. `fn` must not write API keys or users' role or removal (those go
 * through their services): such transactions leave this process's cache of verified keys valid
 * (issue 5, keysEpoch).
 */
export function createWriteRunner(deps: { db: Db; dialect: Dialect }) {
  return async function writeAs<T>(actor: Actor, fn: (trx: Db) => Promise<T>): Promise<T> {
    return deps.dialect.writeTransaction(
      deps.db,
      async (trx) => {
        if (actor.kind === 'api_key') {
          if (!(await keysRepository.isActive(trx, actor.keyId, deps.dialect.rowLocks))) {
            throw new UnauthorizedError('expired_token');
          }
        } else if (!(await sessionActive(trx, actor, deps.dialect.rowLocks))) {
          throw sessionEndedError();
        }
        return fn(trx);
      },
      { keepsKeys: true },
    );
  };
}
export type WriteRunner = ReturnType<typeof createWriteRunner>;

/** The session is open and its user still a member (locked FOR SHARE where rows lock, so sign-out waits). */
async function sessionActive(trx: Db, actor: SessionActor, rowLocks: boolean): Promise<boolean> {
  let q = trx
    .selectFrom('console_sessions')
    .innerJoin('users', (j) => j.on('users.id', '=', actor.userId))
    .select('console_sessions.id')
    .where('console_sessions.id', '=', actor.sessionId)
    .where('console_sessions.ended_at', 'is', null)
    .where('users.removed_at', 'is', null);
  if (rowLocks) q = q.forShare();
  return (await q.executeTakeFirst()) !== undefined;
}
