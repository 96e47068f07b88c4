import { randomBytes } from 'node:crypto';
import { createLeasedOutbox } from '../../db/leased-outbox.js';
import type { MailboxTable, NotificationsTable, UsersTable } from '../../db/types.js';
import { isoAt } from '../../kernel/clock.js';
import { newId } from '../../kernel/ids.js';
import { OPTIONAL_CATEGORIES } from '../../kernel/notification-types.js';
import { escapeControl } from '../../kernel/text.js';
import type {
  InvoiceNoticeData,
  LinkNoticeData,
  SecurityNoticeData,
  UsageNoticeData,
} from '../../platform/domain-events.js';
import type { Unit } from '../../platform/unit-of-work.js';
import {
  type EndpointNoticeData,
  renderBillingEmail,
  renderEndpointEmail,
  renderLinkEmail,
  renderSecurityEmail,
} from './email-render.js';
import { notificationsRepository as repo } from './notifications.repository.js';
import type { NotificationsDeps, OutgoingMail } from './notifications-deps.js';

/** Attempts per notification: the first and 5 retries, about 1, 4, 16, 64 and 256 minutes apart. */
export const MAX_SEND_ATTEMPTS = 6;
const RETRY_BASE_MS = 60_000;
const RETRY_FACTOR = 4;
/** The lease of a claim when none is given (MAIL_LEASE_MS): a dead sender's claims return after it. */
const DEFAULT_LEASE_MS = 2 * 60_000;
const CLAIM_BATCH = 20;

/**
 * The sending side of the notification outbox (docs/api.md#notifications): the worker's `sendDue`
 * sends over SMTP when a transport is given (SMTP_URL), else keeps the email in the local mailbox
 * (`wsvc mail list|show`) with an info log line. A claim is leased, so a notification is sent again
 * only when its sender died between the send and the commit of its outcome.
 */
export function createEmailSender(deps: NotificationsDeps) {
  const { db, clock } = deps;
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  const workerId = `ntfw_${randomBytes(8).toString('hex')}`;

  // The lease and drain loop shared with the integrations' messages (db/leased-outbox.ts); one email at a time.
  const outbox = createLeasedOutbox({
    clock,
    leaseMs,
    batch: CLAIM_BATCH,
    concurrent: false,
    claim: (u: Unit, lease) => u.run(({ trx }) => repo.claim(trx, { ...lease, workerId })),
    sendOne: (u, n) => sendOne(u, n),
  });

  /**
   * Sends every due notification, writing with `u` (the worker's job); returns how many were sent. A call
   * while a run is under way (a slow SMTP server outlasting the job's interval) waits for that run.
   */
  const sendDue = (u: Unit) => outbox.sendDue(u);

  /** Message-ID from the notification id, at the host of PUBLIC_URL. */
  function messageIdOf(id: string): string {
    return `<${id}@${new URL(deps.publicUrl()).hostname}>`;
  }

  /** The email of a notification; undefined when it can no longer be written (a link already given up). */
  function compose(n: NotificationsTable, to: UsersTable): OutgoingMail | undefined {
    const base = `${deps.publicUrl()}/console/w/${n.workspace_id}`;
    let r: ReturnType<typeof renderEndpointEmail>;
    if (n.category === 'account') {
      if (!n.secret || (n.type !== 'invite' && n.type !== 'password.reset')) return undefined;
      r = renderLinkEmail(n.type, JSON.parse(n.data) as LinkNoticeData, to, n.secret);
    } else if (n.category === 'security') {
      const d = JSON.parse(n.data) as SecurityNoticeData;
      const page = d.key ? `${d.key.env}/settings/keys` : d.member ? 'live/settings/members' : 'live/settings/profile';
      r = renderSecurityEmail(n.type, d, to, `${base}/${page}`);
    } else if (n.category === 'usage' || n.category === 'billing') {
      const d = JSON.parse(n.data) as UsageNoticeData | InvoiceNoticeData;
      r = renderBillingEmail(n.type, d, to, `${base}/live/settings/billing`);
    } else {
      const d = JSON.parse(n.data) as EndpointNoticeData;
      r = renderEndpointEmail(n.type, d, to, `${base}/${d.env}/webhooks/${d.webhook_id}`);
    }
    // A name stored before names refused control characters never breaks the Subject header: the
    // mailbox keeps, and SMTP sends, one line with such characters escaped (docs/api.md#names).
    const subject = escapeControl(r.subject);
    const mail: OutgoingMail = { from: deps.mailFrom, to: to.email, ...r, subject, messageId: messageIdOf(n.id) };
    // Optional categories: the profile's preferences are where one unsubscribes (RFC 2369).
    if ((OPTIONAL_CATEGORIES as readonly string[]).includes(n.category)) {
      mail.headers = { 'List-Unsubscribe': `<${base}/live/settings/profile#notifications>` };
    }
    return mail;
  }

  async function sendOne(u: Unit, n: NotificationsTable): Promise<boolean> {
    const user = await deps.userRow(db, n.user_id);
    if (!user || user.removed_at || user.workspace_id !== n.workspace_id) {
      const skipped = {
        status: 'skipped',
        next_attempt_at: null,
        last_error: 'recipient removed',
        sent_at: null,
      } as const;
      await u.run(({ trx }) => repo.finish(trx, n.id, workerId, { ...skipped, attempted: false }));
      return false;
    }
    const mail = compose(n, user);
    if (!mail) {
      const skipped = { status: 'skipped', next_attempt_at: null, last_error: 'link missing', sent_at: null } as const;
      await u.run(({ trx }) => repo.finish(trx, n.id, workerId, { ...skipped, attempted: false }));
      return false;
    }
    const sentAt = isoAt(clock.now());
    const sent = { status: 'sent', next_attempt_at: null, last_error: null, sent_at: sentAt, attempted: true } as const;
    if (!deps.transport) {
      const row: MailboxTable = {
        id: newId('mail'),
        notification_id: n.id,
        to_address: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        message_id: mail.messageId,
        created_at: sentAt,
      };
      // Kept and marked sent in one transaction: exactly once.
      const kept = await u.run(async ({ trx }) => {
        if (!(await repo.finish(trx, n.id, workerId, sent))) return false;
        await repo.insertMail(trx, row);
        return true;
      });
      // Never the body: links in other emails (invites, resets) are credentials.
      if (kept) {
        deps.log?.info(
          { mailId: row.id, notificationId: n.id, to: mail.to, subject: mail.subject },
          `email kept in the local mailbox (SMTP_URL is not set); read it with: wsvc mail show ${row.id}`,
        );
      }
      return kept;
    }
    // The lease runs from now, not from the batch's claim, and is renewed while the server is slow,
    // so a living sender never loses it: only a dead one's email is sent again (docs/notifications.md#the-crash-window).
    const renew = () => u.run(({ trx }) => repo.renew(trx, n.id, workerId, isoAt(clock.now() + leaseMs)));
    if (!(await renew())) return false;
    const heartbeat = setInterval(() => void renew().catch(() => undefined), leaseMs / 3);
    heartbeat.unref();
    try {
      await deps.transport.sendMail(mail);
    } catch (err) {
      clearInterval(heartbeat);
      const attempts = n.attempt_count + 1;
      const last = attempts >= MAX_SEND_ATTEMPTS;
      const error = err instanceof Error ? err.message.slice(0, 500) : String(err);
      const next = last ? null : isoAt(clock.now() + RETRY_BASE_MS * RETRY_FACTOR ** (attempts - 1));
      deps.log?.warn(
        { notificationId: n.id, attempt: attempts, error, nextAttemptAt: next },
        last ? 'email failed; no retries left' : 'email failed; will retry',
      );
      const failed = {
        status: last ? 'failed' : 'pending',
        next_attempt_at: next,
        last_error: error,
        sent_at: null,
      } as const;
      await u.run(({ trx }) => repo.finish(trx, n.id, workerId, { ...failed, attempted: true }));
      return false;
    }
    clearInterval(heartbeat);
    // A crash before this commit sends it again after the lease (docs/notifications.md#the-crash-window).
    await u.run(({ trx }) => repo.finish(trx, n.id, workerId, sent));
    return true;
  }

  return { sendDue };
}
