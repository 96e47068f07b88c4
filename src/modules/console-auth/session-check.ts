import type { Db, Dialect } from '../../db/dialect.js';
import { type AppError, SessionEndedError } from '../../kernel/errors.js';
import type { SessionPrincipal } from '../../kernel/principal.js';
import { type PrincipalCheck, sessionLock, userLock } from '../../platform/unit-of-work.js';
import { consoleAuthRepository } from './console-auth.repository.js';

/** The console's answer when its session has ended (sign-out, password change, expiry) or never was. */
export function sessionEndedError(): AppError {
  return new SessionEndedError();
}

/**
 * The write-time check of a console session (docs/console.md): the session is not ended and its user is still a
 * member, so a sign-out or a removal that commits first wins over a write in flight.
 */
export function sessionCheck(
  dialect: Dialect,
  /** The users module's: whether the user is a current member. */
  users: { isMember(db: Db, userId: string): Promise<boolean> },
): PrincipalCheck<SessionPrincipal> {
  return async (trx, p) => {
    await dialect.holdShared(trx, [sessionLock(p.sessionId), userLock(p.userId)]);
    return (await consoleAuthRepository.sessionOpen(trx, p.sessionId)) && users.isMember(trx, p.userId);
  };
}
