import type { ExpressionBuilder } from 'kysely';
import type { Db } from '../../db/dialect.js';
import { claimLeased, finishLeased } from '../../db/leased-outbox.js';
import type { Database, MailboxTable, NotificationPreferencesTable, NotificationsTable } from '../../db/types.js';
import { countByWorkspace, PURGE_BATCH_ROWS } from '../../platform/batched-purge.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

/** Rows for the feed: written with the in-app channel (null: every channel). */
const inApp = (eb: ExpressionBuilder<Database, 'notifications'>) =>
  eb.or([eb('channels', 'is', null), eb('channels', 'like', '%in_app%')]);

/** SQL of the notification outbox and the local mailbox (docs/api.md#notifications). */
export const notificationsRepository = {
  insertMany(db: WriteTx, rows: NotificationsTable[]) {
    return rows.length === 0 ? Promise.resolve() : db.insertInto('notifications').values(rows).execute();
  },

  /** Leases up to `limit` due notifications to `workerId` until `leaseUntil` (db/leased-outbox.ts). */
  async claim(
    db: WriteTx,
    opts: { now: string; leaseUntil: string; workerId: string; limit: number },
  ): Promise<NotificationsTable[]> {
    // Only the deletion notices of a workspace scheduled for deletion are sent; the rest wait for a cancellation.
    const ids = await claimLeased(db, 'notifications', {
      ...opts,
      sentWhileDeleting: ['workspace.deletion_scheduled', 'workspace.deletion_cancelled'],
    });
    if (ids.length === 0) return [];
    return db.selectFrom('notifications').selectAll().where('id', 'in', ids).orderBy('id').execute();
  },

  /** Extends `workerId`'s lease on a pending notification to `leaseUntil`; false: it no longer holds it. */
  async renew(db: WriteTx, id: string, workerId: string, leaseUntil: string): Promise<boolean> {
    const r = await db
      .updateTable('notifications')
      .set({ lease_until: leaseUntil })
      .where('id', '=', id)
      .where('leased_by', '=', workerId)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  /** Writes a send's outcome if `workerId` still holds the lease; returns whether it did (db/leased-outbox.ts). */
  finish(
    db: WriteTx,
    id: string,
    workerId: string,
    set: Pick<NotificationsTable, 'status' | 'next_attempt_at' | 'last_error' | 'sent_at'> & { attempted: boolean },
  ): Promise<boolean> {
    const { attempted, ...fields } = set;
    // An emailed link lives on only in the email once the notification is done (migration 014).
    const row: Record<string, string | null> = { ...fields };
    if (fields.status !== 'pending') row.secret = null;
    return finishLeased(db, 'notifications', id, workerId, row, attempted);
  },

  find(db: Db, id: string): Promise<NotificationsTable | undefined> {
    return db.selectFrom('notifications').selectAll().where('id', '=', id).executeTakeFirst();
  },

  /** A workspace's notifications of one user, newest first (tests, the future feed). */
  ofUser(db: Db, workspaceId: string, userId: string): Promise<NotificationsTable[]> {
    return db
      .selectFrom('notifications')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('user_id', '=', userId)
      .orderBy('id', 'desc')
      .execute();
  },

  /** The feed of a user in a workspace (every category but `account`), newest first, ids below `before`. */
  feed(
    db: Db,
    q: { workspaceId: string; userId: string; before?: string; limit: number },
  ): Promise<NotificationsTable[]> {
    let query = db
      .selectFrom('notifications')
      .selectAll()
      .where('workspace_id', '=', q.workspaceId)
      .where('user_id', '=', q.userId)
      .where('category', '!=', 'account')
      .where(inApp);
    if (q.before) query = query.where('id', '<', q.before);
    return query.orderBy('id', 'desc').limit(q.limit).execute();
  },

  async unreadCount(db: Db, workspaceId: string, userId: string): Promise<number> {
    const r = await db
      .selectFrom('notifications')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('workspace_id', '=', workspaceId)
      .where('user_id', '=', userId)
      .where('category', '!=', 'account')
      .where(inApp)
      .where('read_at', 'is', null)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  },

  /** Marks unread feed notifications of a user read (`ids`, or all when null); returns how many. */
  async markRead(
    db: WriteTx,
    q: { workspaceId: string; userId: string; ids: string[] | null; at: string },
  ): Promise<number> {
    let query = db
      .updateTable('notifications')
      .set({ read_at: q.at })
      .where('workspace_id', '=', q.workspaceId)
      .where('user_id', '=', q.userId)
      .where('category', '!=', 'account')
      .where(inApp)
      .where('read_at', 'is', null);
    if (q.ids) query = query.where('id', 'in', q.ids);
    const r = await query.executeTakeFirst();
    return Number(r.numUpdatedRows);
  },

  /** Deletes notifications created before `before`, whatever their status (an email 90 days late is no use). */
  /** Deletes up to `limit` of the notifications created before `before`; returns how many per workspace. */
  async purgeBefore(db: WriteTx, before: string, limit = PURGE_BATCH_ROWS): Promise<Map<string, number>> {
    const rows = await db
      .selectFrom('notifications')
      .select(['id', 'workspace_id'])
      .where('created_at', '<', before)
      .limit(limit)
      .execute();
    if (rows.length === 0) return new Map();
    await db
      .deleteFrom('notifications')
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    return countByWorkspace(rows);
  },

  /** The preferences of these users for one category. */
  preferencesOf(db: Db, userIds: string[], category: string): Promise<NotificationPreferencesTable[]> {
    if (userIds.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('notification_preferences')
      .selectAll()
      .where('user_id', 'in', userIds)
      .where('category', '=', category)
      .execute();
  },

  preferencesOfUser(db: Db, userId: string): Promise<NotificationPreferencesTable[]> {
    return db.selectFrom('notification_preferences').selectAll().where('user_id', '=', userId).execute();
  },

  async upsertPreference(db: WriteTx, row: NotificationPreferencesTable): Promise<void> {
    await db
      .insertInto('notification_preferences')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['user_id', 'category']).doUpdateSet({ channels: row.channels, updated_at: row.updated_at }),
      )
      .execute();
  },

  insertMail(db: WriteTx, row: MailboxTable) {
    return db.insertInto('mailbox').values(row).execute();
  },

  /** The local mailbox, newest first. */
  listMail(db: Db, limit: number): Promise<Omit<MailboxTable, 'text' | 'html'>[]> {
    return db
      .selectFrom('mailbox')
      .select(['id', 'notification_id', 'to_address', 'subject', 'message_id', 'created_at'])
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  },

  findMail(db: Db, id: string): Promise<MailboxTable | undefined> {
    return db.selectFrom('mailbox').selectAll().where('id', '=', id).executeTakeFirst();
  },
};
