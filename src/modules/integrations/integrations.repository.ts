import { type Db, later } from '../../db/dialect.js';
import { claimLeased, finishLeased } from '../../db/leased-outbox.js';
import { type Param, prepared } from '../../db/prepared.js';
import { sealedUnderOther, toSeal } from '../../db/sealed-values.js';
import type { IntegrationMessagesTable, IntegrationsTable } from '../../db/types.js';
import type { SealedAt } from '../../lib/sealed.js';
import { countByWorkspace, PURGE_BATCH_ROWS } from '../../platform/batched-purge.js';
import type { SealedColumn, StoredSecret } from '../../platform/sealed-columns.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

// Performance (docs/performance.md#queries-built-once): every resource event reads this in its write's transaction;
// built and compiled once, a named prepared statement on PostgreSQL.
const enabledQuery = prepared((db, $: Param<{ workspaceId: string }>) =>
  db
    .selectFrom('integrations')
    .selectAll()
    .where('workspace_id', '=', $('workspaceId'))
    .where('status', '=', 'enabled')
    .orderBy('id'),
);

/** SQL of integrations and their message log/outbox (docs/integrations.md). */
export const integrationsRepository = {
  list(db: Db, workspaceId: string): Promise<IntegrationsTable[]> {
    return db.selectFrom('integrations').selectAll().where('workspace_id', '=', workspaceId).orderBy('id').execute();
  },

  find(db: Db, workspaceId: string, id: string): Promise<IntegrationsTable | undefined> {
    return db
      .selectFrom('integrations')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .executeTakeFirst();
  },

  /** The enabled integrations of a workspace (the hooks pick by env, event or category). */
  async enabledOf(db: Db, workspaceId: string): Promise<IntegrationsTable[]> {
    return (await enabledQuery.execute(db, { workspaceId })).rows;
  },

  insert(db: WriteTx, row: IntegrationsTable) {
    return db.insertInto('integrations').values(row).execute();
  },

  update(db: WriteTx, id: string, set: Partial<IntegrationsTable>) {
    return db.updateTable('integrations').set(set).where('id', '=', id).execute();
  },

  /** Deletes an integration and its log (pending messages included: none is sent after). */
  async remove(db: WriteTx, id: string): Promise<void> {
    await db.deleteFrom('integration_messages').where('integration_id', '=', id).execute();
    await db.deleteFrom('integrations').where('id', '=', id).execute();
  },

  /** Queues messages in the change's transaction; sent with its next statement or COMMIT where the dialect defers (`later`). */
  insertMessages(db: WriteTx, rows: IntegrationMessagesTable[]): Promise<void> {
    return rows.length === 0
      ? Promise.resolve()
      : later(db, db.insertInto('integration_messages').values(rows).compile());
  },

  /** The log, newest first. */
  messages(db: Db, integrationId: string, limit: number): Promise<IntegrationMessagesTable[]> {
    return db
      .selectFrom('integration_messages')
      .selectAll()
      .where('integration_id', '=', integrationId)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  },

  findMessage(db: Db, id: string): Promise<IntegrationMessagesTable | undefined> {
    return db.selectFrom('integration_messages').selectAll().where('id', '=', id).executeTakeFirst();
  },

  /** Deletes finished messages (not pending) created before `cutoff`; returns how many. */
  /** Deletes up to `limit` of the finished messages created before `cutoff`; returns how many per workspace. */
  async purgeBefore(db: WriteTx, cutoff: string, limit = PURGE_BATCH_ROWS): Promise<Map<string, number>> {
    const rows = await db
      .selectFrom('integration_messages')
      .select(['id', 'workspace_id'])
      .where('created_at', '<', cutoff)
      .where('status', '!=', 'pending')
      .limit(limit)
      .execute();
    if (rows.length === 0) return new Map();
    await db
      .deleteFrom('integration_messages')
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    return countByWorkspace(rows);
  },

  /** Leases up to `limit` due messages to `workerId` until `leaseUntil`, with their destination (db/leased-outbox.ts). */
  async claim(
    db: WriteTx,
    opts: { now: string; leaseUntil: string; workerId: string; limit: number },
  ): Promise<(IntegrationMessagesTable & { url: string; kind: string; integration_status: string })[]> {
    // A workspace scheduled for deletion posts nothing to chat until the deletion is cancelled.
    const ids = await claimLeased(db, 'integration_messages', { ...opts, sentWhileDeleting: [] });
    if (ids.length === 0) return [];
    return db
      .selectFrom('integration_messages as m')
      .innerJoin('integrations as i', 'i.id', 'm.integration_id')
      .selectAll('m')
      .select(['i.url as url', 'i.kind as kind', 'i.status as integration_status'])
      .where('m.id', 'in', ids)
      .orderBy('m.id')
      .execute();
  },

  /** Writes an attempt's outcome if `workerId` still holds the lease; returns whether it did (db/leased-outbox.ts). */
  finish(
    db: WriteTx,
    id: string,
    workerId: string,
    set: Pick<
      IntegrationMessagesTable,
      'status' | 'next_attempt_at' | 'last_response_status' | 'last_response_excerpt' | 'last_error' | 'sent_at'
    > & { attempted: boolean },
  ): Promise<boolean> {
    const { attempted, ...fields } = set;
    return finishLeased(db, 'integration_messages', id, workerId, fields, attempted);
  },
};

/** Where an integration's URL is sealed: its workspace, its row (src/lib/sealed.ts). */
export function urlAt(workspaceId: string, integrationId: string): SealedAt {
  return { column: 'integrations.url', scope: workspaceId, row: integrationId };
}

/** The Slack and Discord URLs as a sealed column (src/platform/sealed-columns.ts). */
export const urlSealedColumn: SealedColumn = {
  column: 'integrations.url',
  async toSeal(db: Db, kid: string | null, limit: number): Promise<StoredSecret[]> {
    const rows = await db
      .selectFrom('integrations')
      .select(['id', 'workspace_id', 'url'])
      .where(toSeal('url', kid))
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ at: urlAt(r.workspace_id, r.id), stored: r.url }));
  },
  async replace(db: WriteTx, s: StoredSecret, next: string): Promise<boolean> {
    const r = await db
      .updateTable('integrations')
      .set({ url: next })
      .where('id', '=', s.at.row)
      .where('url', '=', s.stored)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },
  async sealedUnderOther(db: Db, kids: readonly string[]): Promise<string | undefined> {
    const r = await db
      .selectFrom('integrations')
      .select('url')
      .where(sealedUnderOther('url', kids))
      .limit(1)
      .executeTakeFirst();
    return r?.url;
  },
};
