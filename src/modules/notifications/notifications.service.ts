import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/dialect.js';
import type { MailboxTable, NotificationCategory, NotificationsTable, UsersTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../lib/clock.js';
import { fieldError } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import { createLeasedOutbox } from '../../lib/leased-outbox.js';
import type { Actor, Principal } from '../../lib/principal.js';
import { escapeControl } from '../../lib/text.js';
import type { WriteRunner, WriteTx } from '../auth/write-runner.js';
import type { EndpointNotice } from '../webhooks/endpoint-health.js';
import { notificationsRepository as repo } from './notifications.repository.js';
import {
  type EndpointNoticeData,
  type InvoiceNoticeData,
  type LinkNoticeData,
  notificationTitle,
  renderBillingEmail,
  renderEndpointEmail,
  renderLinkEmail,
  renderSecurityEmail,
  type SecurityNoticeData,
  type UsageNoticeData,
} from './render.js';

/** A security event (D27: always on), written in the transaction of the change. */
export interface SecurityNotice {
  type:
    | 'key.created'
    | 'key.revoked'
    | 'key.rolled'
    | 'key.expiring'
    | 'password.changed'
    | 'member.added'
    | 'member.removed'
    | 'member.role_changed'
    | 'mfa.enabled'
    | 'mfa.disabled'
    | 'mfa.reset'
    | 'mfa.code_reused'
    | 'recovery_codes.regenerated'
    | 'recovery_code.used'
    | 'passkey.added'
    | 'passkey.removed'
    | 'sso.configured'
    | 'workspace.settings_changed';
  workspaceId: string;
  /** The affected user(s), told whatever their role (a removed member is not: see docs/notifications.md). */
  users: string[];
  /** Whether the workspace's admins are told too. */
  admins: boolean;
  /** Not told even as an admin (a new member of their own addition: they get the invite). */
  except?: string;
  data: SecurityNoticeData;
}

/** An invite or password-reset email, written in the transaction that makes its link. */
export interface LinkNotice {
  type: 'invite' | 'password.reset';
  workspaceId: string;
  userId: string;
  /** The single-use link: kept in `secret` until the email is sent or given up. */
  url: string;
  data: LinkNoticeData;
}

/** A notification as integrations forward it: once per workspace, not per recipient. */
export interface ForwardedNotice {
  workspaceId: string;
  category: string;
  type: string;
  title: string;
  data: Record<string, unknown>;
  at: string;
}

/**
 * A usage or billing notification to the workspace's admins (D27: on by default, per preferences),
 * written in the caller's transaction: the threshold's record (usage) or the invoice's finalization.
 */
export type BillingNotice =
  | { type: 'usage.threshold'; workspaceId: string; data: UsageNoticeData }
  | { type: 'invoice.issued'; workspaceId: string; data: InvoiceNoticeData };

/** Categories a person may turn off per channel (D27); security cannot be. */
export const OPTIONAL_CATEGORIES = ['webhooks', 'usage', 'billing'] as const;
export type OptionalCategory = (typeof OPTIONAL_CATEGORIES)[number];
const ALL_CHANNELS = 'email,in_app';

/** One category's channels for a person. */
export interface NotificationPreference {
  category: 'security' | OptionalCategory;
  email: boolean;
  in_app: boolean;
  /** true: cannot be turned off (security). */
  locked: boolean;
}

/** How long the feed keeps a notification (D27): the `purge-notifications` job deletes older ones. */
export const FEED_RETENTION_MS = 90 * 24 * 3_600_000;

/** A notification as the console's feed shows it. */
export interface FeedItem {
  id: string;
  category: string;
  type: string;
  title: string;
  /** What the notification says (the endpoint, key or member, and the times), as written. */
  data: Record<string, unknown>;
  created_at: string;
  read_at: string | null;
}

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

/** Attempts per notification: the first and 5 retries, about 1, 4, 16, 64 and 256 minutes apart. */
export const MAX_SEND_ATTEMPTS = 6;
const RETRY_BASE_MS = 60_000;
const RETRY_FACTOR = 4;
/** The lease of a claim when none is given (MAIL_LEASE_MS): a dead sender's claims return after it. */
const DEFAULT_LEASE_MS = 2 * 60_000;
const CLAIM_BATCH = 20;

/**
 * The notification outbox (docs/api.md#notifications): notifications are written in the
 * transaction of what causes them (`endpointNotice`, given to endpoint health) and sent by the
 * worker (`sendDue`): over SMTP when a transport is given (SMTP_URL), else kept in the local
 * mailbox (`wsvc mail list|show`) with an info log line. A claim is leased, so a notification is
 * sent again only when its sender died between the send and the commit of its outcome.
 */
export function createNotificationsService(deps: {
  db: Db;
  clock: Clock;
  writeAs: WriteRunner;
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
  /** Integrations (docs/integrations.md): told of each notification once per workspace, in its transaction. */
  forward?: (trx: Db, n: ForwardedNotice) => Promise<void>;
  /** MAIL_LEASE_MS: how long a claim lasts; renewed before and during each SMTP send (docs/notifications.md#the-crash-window). */
  leaseMs?: number;
}) {
  const { db, clock, writeAs } = deps;
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  const workerId = `ntfw_${randomBytes(8).toString('hex')}`;

  /** Writes one notification per admin of the endpoint's workspace, in `trx` (the outcome's transaction). */
  async function endpointNotice(trx: WriteTx, notice: EndpointNotice): Promise<void> {
    const w = notice.webhook;
    const data: EndpointNoticeData = {
      webhook_id: w.id,
      url: w.url,
      label: w.label,
      env: w.env,
      at: notice.at,
      failing_since: w.failing_since ?? null,
      disable_after_h: deps.disableAfterH,
    };
    const now = isoAt(clock.now());
    const rows: NotificationsTable[] = (await deps.admins(trx, w.workspace_id)).map((u) => ({
      id: newId('notification'),
      workspace_id: w.workspace_id,
      user_id: u.id,
      category: 'webhooks',
      type: `endpoint.${notice.kind}`,
      data: JSON.stringify(data),
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: now,
      lease_until: null,
      leased_by: null,
      last_error: null,
      sent_at: null,
      created_at: now,
    }));
    await repo.insertMany(trx, await applyPreferences(trx, rows, 'webhooks'));
    const type = `endpoint.${notice.kind}`;
    await deps.forward?.(trx, {
      workspaceId: w.workspace_id,
      category: 'webhooks',
      type,
      title: notificationTitle(type as NotificationsTable['type'], data),
      data: { ...data },
      at: notice.at,
    });
  }

  /**
   * Each recipient's channels for an optional category, on rows about to be written: none → no row;
   * no email → written `skipped` (the feed only); no in-app → kept out of the feed (`channels`).
   */
  async function applyPreferences(
    trx: Db,
    rows: NotificationsTable[],
    category: OptionalCategory,
  ): Promise<NotificationsTable[]> {
    const prefs = new Map(
      (await repo.preferencesOf(trx, [...new Set(rows.map((r) => r.user_id))], category)).map((p) => [
        p.user_id,
        p.channels,
      ]),
    );
    const out: NotificationsTable[] = [];
    for (const r of rows) {
      const channels = prefs.get(r.user_id) ?? ALL_CHANNELS;
      if (channels === '') continue;
      const email = channels.includes('email');
      out.push({
        ...r,
        channels: channels === ALL_CHANNELS ? null : channels,
        ...(email ? {} : { status: 'skipped', next_attempt_at: null, last_error: 'email turned off' }),
      });
    }
    return out;
  }

  /** The caller's channels per category (security first, always on). */
  async function preferences(p: Principal): Promise<NotificationPreference[]> {
    const rows = p.userId === null ? [] : await repo.preferencesOfUser(db, p.userId);
    const chosen = new Map(rows.map((r) => [r.category, r.channels]));
    return [
      { category: 'security', email: true, in_app: true, locked: true },
      ...OPTIONAL_CATEGORIES.map((category) => {
        const channels = chosen.get(category) ?? ALL_CHANNELS;
        return { category, email: channels.includes('email'), in_app: channels.includes('in_app'), locked: false };
      }),
    ];
  }

  /** Sets the caller's channels for the categories given; turning security off is 400 and changes nothing. */
  async function setPreferences(
    p: Principal,
    input: { category: NotificationPreference['category']; email: boolean; in_app: boolean }[],
  ): Promise<NotificationPreference[]> {
    if (input.some((i) => i.category === 'security' && !(i.email && i.in_app))) {
      throw fieldError('preferences', 'locked', 'Security notifications cannot be turned off.');
    }
    const userId = p.userId;
    if (userId === null) return preferences(p);
    const at = isoAt(clock.now());
    await writeAs(p, async (trx) => {
      for (const i of input) {
        if (i.category === 'security') continue;
        const channels = [i.email ? 'email' : '', i.in_app ? 'in_app' : ''].filter(Boolean).join(',');
        await repo.upsertPreference(trx, { user_id: userId, category: i.category, channels, updated_at: at });
      }
    });
    return preferences(p);
  }

  function row(
    workspaceId: string,
    userId: string,
    category: NotificationCategory,
    type: NotificationsTable['type'],
    data: object,
    secret: string | null = null,
  ): NotificationsTable {
    const now = isoAt(clock.now());
    return {
      id: newId('notification'),
      workspace_id: workspaceId,
      user_id: userId,
      category,
      type,
      data: JSON.stringify(data),
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: now,
      lease_until: null,
      leased_by: null,
      last_error: null,
      sent_at: null,
      created_at: now,
      read_at: null,
      secret,
    };
  }

  /** Writes one usage (`usage.threshold`) or billing (`invoice.issued`) notification per admin, in `trx`, per their preferences. */
  async function billingNotice(trx: Db, n: BillingNotice): Promise<void> {
    const category = n.type === 'usage.threshold' ? 'usage' : 'billing';
    const rows = (await deps.admins(trx, n.workspaceId)).map((u) => row(n.workspaceId, u.id, category, n.type, n.data));
    await repo.insertMany(trx, await applyPreferences(trx, rows, category));
    await deps.forward?.(trx, {
      workspaceId: n.workspaceId,
      category,
      type: n.type,
      title: notificationTitle(n.type, n.data),
      data: { ...n.data },
      at: n.data.at,
    });
  }

  /** Writes an invite or password-reset email in `trx` (the transaction that makes the link). */
  async function linkNotice(trx: Db, n: LinkNotice): Promise<void> {
    await repo.insertMany(trx, [row(n.workspaceId, n.userId, 'account', n.type, n.data, n.url)]);
  }

  /**
   * Writes one security notification per recipient (the affected users, and the workspace's admins
   * when asked), in `trx` (the change's transaction, so a rolled-back change tells no one).
   */
  async function securityNotice(trx: Db, n: SecurityNotice): Promise<void> {
    const ids = new Set(n.users);
    if (n.admins) for (const a of await deps.admins(trx, n.workspaceId)) ids.add(a.id);
    if (n.except) ids.delete(n.except);
    await repo.insertMany(
      trx,
      [...ids].map((id) => row(n.workspaceId, id, 'security', n.type, n.data)),
    );
    await deps.forward?.(trx, {
      workspaceId: n.workspaceId,
      category: 'security',
      type: n.type,
      title: notificationTitle(n.type, n.data),
      data: { ...n.data },
      at: n.data.at,
    });
  }

  // The lease and drain loop shared with the integrations' messages (lib/leased-outbox.ts); one email at a time.
  const outbox = createLeasedOutbox({
    clock,
    leaseMs,
    batch: CLAIM_BATCH,
    concurrent: false,
    claim: (actor, lease) => writeAs(actor, (trx) => repo.claim(trx, { ...lease, workerId })),
    sendOne: (actor, n) => sendOne(actor, n),
  });

  /**
   * Sends every due notification as `actor` (the worker's job); returns how many were sent. A call
   * while a run is under way (a slow SMTP server outlasting the job's interval) waits for that run.
   */
  const sendDue = (actor: Actor) => outbox.sendDue(actor);

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

  async function sendOne(actor: Actor, n: NotificationsTable): Promise<boolean> {
    const user = await deps.userRow(db, n.user_id);
    if (!user || user.removed_at || user.workspace_id !== n.workspace_id) {
      const skipped = {
        status: 'skipped',
        next_attempt_at: null,
        last_error: 'recipient removed',
        sent_at: null,
      } as const;
      await writeAs(actor, (trx) => repo.finish(trx, n.id, workerId, { ...skipped, attempted: false }));
      return false;
    }
    const mail = compose(n, user);
    if (!mail) {
      const skipped = { status: 'skipped', next_attempt_at: null, last_error: 'link missing', sent_at: null } as const;
      await writeAs(actor, (trx) => repo.finish(trx, n.id, workerId, { ...skipped, attempted: false }));
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
      const kept = await writeAs(actor, async (trx) => {
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
    const renew = () => writeAs(actor, (trx) => repo.renew(trx, n.id, workerId, isoAt(clock.now() + leaseMs)));
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
      await writeAs(actor, (trx) => repo.finish(trx, n.id, workerId, { ...failed, attempted: true }));
      return false;
    }
    clearInterval(heartbeat);
    // A crash before this commit sends it again after the lease (docs/notifications.md#the-crash-window).
    await writeAs(actor, (trx) => repo.finish(trx, n.id, workerId, sent));
    return true;
  }

  /**
   * The caller's feed in their workspace (every category but the invite and reset emails), newest
   * first: `limit` items after `cursor` (the last id of the previous page), and the unread count.
   */
  async function feed(
    p: Principal,
    q: { cursor?: string; limit: number },
  ): Promise<{ items: FeedItem[]; next_cursor: string | null; unread_count: number }> {
    if (p.userId === null) return { items: [], next_cursor: null, unread_count: 0 };
    const who = { workspaceId: p.workspaceId, userId: p.userId };
    const rows = await repo.feed(db, { ...who, before: q.cursor, limit: q.limit + 1 });
    const page = rows.slice(0, q.limit);
    const items = page.map((r) => {
      const data = JSON.parse(r.data) as Record<string, unknown>;
      return {
        id: r.id,
        category: r.category,
        type: r.type,
        title: notificationTitle(r.type, data),
        data,
        created_at: r.created_at,
        read_at: r.read_at ?? null,
      };
    });
    const next_cursor = rows.length > q.limit ? (page.at(-1)?.id ?? null) : null;
    return { items, next_cursor, unread_count: await repo.unreadCount(db, who.workspaceId, who.userId) };
  }

  /** Marks the caller's notifications read: `ids` (others' or unknown ids change nothing) or `all`. */
  async function markRead(p: Principal, input: { ids?: string[]; all?: boolean }): Promise<{ unread_count: number }> {
    if ((input.ids === undefined) === (input.all !== true)) {
      throw fieldError('ids', 'invalid_value', 'Give either ids (1 to 100 notification ids) or all: true.');
    }
    const userId = p.userId;
    if (userId === null) return { unread_count: 0 };
    const at = isoAt(clock.now());
    return writeAs(p, async (trx) => {
      const who = { workspaceId: p.workspaceId, userId };
      await repo.markRead(trx, { ...who, ids: input.ids ?? null, at });
      return { unread_count: await repo.unreadCount(trx, who.workspaceId, who.userId) };
    });
  }

  return {
    endpointNotice,
    billingNotice,
    linkNotice,
    securityNotice,
    sendDue,
    feed,
    markRead,
    preferences,
    setPreferences,
    /** Deletes notifications older than 90 days, sent or not (the `purge-notifications` job). */
    purgeExpired: (actor: Actor) =>
      writeAs(actor, (trx) => repo.purgeBefore(trx, isoAt(clock.now() - FEED_RETENTION_MS))),
    /** A notification by id (tests, CLI). */
    find: (id: string) => repo.find(db, id),
    /** A user's notifications in a workspace, newest first. */
    ofUser: (workspaceId: string, userId: string) => repo.ofUser(db, workspaceId, userId),
    /** The local mailbox, newest first (`wsvc mail list`). */
    listMail: (limit = 50) => repo.listMail(db, limit),
    /** One kept email (`wsvc mail show`). */
    findMail: (id: string) => repo.findMail(db, id),
  };
}
export type NotificationsService = ReturnType<typeof createNotificationsService>;
