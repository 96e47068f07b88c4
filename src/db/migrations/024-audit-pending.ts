import type { Kysely } from 'kysely';

/**
 * `audit_pending` (docs/api.md#audit-log): entries written by a change's transaction, not numbered
 * yet. Right after the change commits, the audit sequencer numbers a workspace's pending entries,
 * chains them and moves them to `audit_entries` in one transaction of its own, many at a time: the
 * change's transaction takes no lock shared by the workspace's other writers, so their commits
 * share the database's flushes. `pos` orders one process's entries (those of one change among them).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('audit_pending')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('pos', 'bigint', (c) => c.notNull())
    .addColumn('time', 'text', (c) => c.notNull())
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text', (c) => c.notNull())
    .addColumn('actor_name', 'text', (c) => c.notNull())
    .addColumn('actor_user_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text', (c) => c.notNull())
    .addColumn('env', 'text')
    .addColumn('changes', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .execute();
  await db.schema
    .createIndex('audit_pending_workspace_pos_idx')
    .on('audit_pending')
    .columns(['workspace_id', 'pos'])
    .execute();
}
