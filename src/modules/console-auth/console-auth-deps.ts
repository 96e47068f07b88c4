import type { Db, Dialect } from '../../db/dialect.js';
import type { Clock } from '../../kernel/clock.js';
import type { UnitOfWork } from '../../platform/unit-of-work.js';
import type { SignInGate } from './sign-in-steps.js';

/** What the console-auth service is given (src/services.ts), shared by its parts. */
export interface ConsoleAuthDeps {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  /**
   * The unit of work: sign-in establishes who acts (someone signing in, a link's holder, a person on their own
   * sessions) from the request's client, so it opens the door for that actor itself.
   */
  uow: UnitOfWork;
  /** Base URL of every link (PUBLIC_URL). */
  publicUrl: () => string;
  /** scrypt's cost of new password hashes, as log2 N (PASSWORD_HASH_COST; default DEFAULT_PASSWORD_COST). */
  passwordCost?: number;
  /** Minutes without a request and hours in all after which a session ends (default DEFAULT_SESSIONS). */
  sessions?: { idleMin: number; maxH: number };
  /** Second factors, the second-factor policy and single sign-on (services.ts); absent: a password alone. */
  gate?: SignInGate;
}

/** Emails are compared trimmed and lower-cased. */
export const normalizeEmail = (email: string) => email.trim().toLowerCase();
