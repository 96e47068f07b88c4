import type { Db } from '../../db/dialect.js';
import type { UsersTable } from '../../db/types.js';
import type { Clock } from '../../kernel/clock.js';

/** What the service hands to SMTP (nodemailer's `sendMail` message, the fields used). */
export interface OutgoingMail {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  /** Extra headers: `List-Unsubscribe` on optional categories. */
  headers?: Record<string, string>;
}

/** Sends one email or throws (nodemailer's SMTP transport, or a test's). */
export interface MailTransport {
  sendMail(mail: OutgoingMail): Promise<unknown>;
}

export interface NotificationLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** What the notifications service is given (src/services.ts), shared by its parts. */
export interface NotificationsDeps {
  db: Db;
  clock: Clock;
  /** The workspace's current admins, in `db` (the users module). */
  admins: (db: Db, workspaceId: string) => Promise<UsersTable[]>;
  /** A user's row, removed ones included (the users module). */
  userRow: (db: Db, id: string) => Promise<UsersTable | undefined>;
  publicUrl: () => string;
  mailFrom: string;
  disableAfterH: number;
  /** SMTP; undefined: the local mailbox. */
  transport?: MailTransport;
  log?: NotificationLogger;
  /** MAIL_LEASE_MS: how long a claim lasts; renewed before and during each SMTP send (docs/notifications.md#the-crash-window). */
  leaseMs?: number;
}
