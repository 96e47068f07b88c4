import { isoAt } from '../../kernel/clock.js';
import { fieldError } from '../../kernel/errors.js';
import type { Principal, SystemActor } from '../../kernel/principal.js';
import { purgeInBatches } from '../../platform/batched-purge.js';
import type { Unit } from '../../platform/unit-of-work.js';
import { notificationTitle } from './email-render.js';
import { notificationsRepository as repo } from './notifications.repository.js';
import type { NotificationsDeps } from './notifications-deps.js';

/** How long the feed keeps a notification (docs/notifications.md#the-feed): the `purge-notifications` job deletes older ones. */
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

/** The console's feed (docs/notifications.md#the-feed): a person's notifications, read marks, retention. */
export function createFeed(deps: NotificationsDeps) {
  const { db, clock } = deps;

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
  async function markRead(
    u: Unit<Principal>,
    input: { ids?: string[]; all?: boolean },
  ): Promise<{ unread_count: number }> {
    const p = u.actor;
    if ((input.ids === undefined) === (input.all !== true)) {
      throw fieldError('ids', 'invalid_value', 'Give either ids (1 to 100 notification ids) or all: true.');
    }
    const userId = p.userId;
    if (userId === null) return { unread_count: 0 };
    const at = isoAt(clock.now());
    return u.run(async ({ trx }) => {
      const who = { workspaceId: p.workspaceId, userId };
      await repo.markRead(trx, { ...who, ids: input.ids ?? null, at });
      return { unread_count: await repo.unreadCount(trx, who.workspaceId, who.userId) };
    });
  }

  return {
    feed,
    markRead,
    /**
     * Deletes notifications older than 90 days, sent or not (the `purge-notifications` job), in batches with one
     * `notifications.purged` entry per workspace (docs/settings.md#retention).
     */
    purgeExpired: (u: Unit<SystemActor>) => {
      const before = isoAt(clock.now() - FEED_RETENTION_MS);
      return purgeInBatches(u, {
        action: 'notifications.purged',
        target: 'notifications',
        steps: [{ name: 'notifications', run: (trx, limit) => repo.purgeBefore(trx, before, limit) }],
      });
    },
  };
}

/** Reads for tests and the CLI: a notification, a user's notifications, the local mailbox. */
export function createNotificationReads(deps: Pick<NotificationsDeps, 'db'>) {
  const { db } = deps;
  return {
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
