import type { Db, Dialect } from '../../db/dialect.js';
import type { Clock } from '../../kernel/clock.js';
import type { WriteRunner } from '../auth/write-runner.js';
import type { NotificationsService } from '../notifications/notifications.service.js';
import type { UsersService } from '../users/users.service.js';
import type { SignInGate } from './sign-in-steps.js';

/** What the console-auth service is given (src/services.ts), shared by its parts. */
export interface ConsoleAuthDeps {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  /** The write runner: every write of sign-in, sessions and links, as the actor it is made for. */
  writeAs: WriteRunner;
  users: UsersService;
  /** Base URL of every link (PUBLIC_URL). */
  publicUrl: () => string;
  /**
   * The notification outbox (docs/notifications.md): invite and reset emails and "password changed",
   * written in the transaction of the link or the change. Without it "forgot password" makes no link.
   */
  notifications?: Pick<NotificationsService, 'linkNotice' | 'securityNotice'>;
  /** scrypt's cost of new password hashes, as log2 N (PASSWORD_HASH_COST; default DEFAULT_PASSWORD_COST). */
  passwordCost?: number;
  /** Minutes without a request and hours in all after which a session ends (default DEFAULT_SESSIONS). */
  sessions?: { idleMin: number; maxH: number };
  /** Second factors, the second-factor policy and single sign-on (services.ts); absent: a password alone. */
  gate?: () => SignInGate;
}

/** Emails are compared trimmed and lower-cased. */
export const normalizeEmail = (email: string) => email.trim().toLowerCase();
