import { type Kysely, sql } from 'kysely';

/**
 * The audit log (docs/api.md#audit-log): one row per recorded change, numbered 1, 2, 3… per workspace
 * and chained by hash; one head per workspace holding its last number and hash (the row a writer
 * updates first, which orders the writers of a workspace) and the anchor a purge leaves behind.
 * `time` is the ISO text the hash covers, on both databases.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('audit_entries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
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
    .addColumn('hash', 'text', (c) => c.notNull())
    .addUniqueConstraint('audit_entries_workspace_seq_key', ['workspace_id', 'seq'])
    .execute();
  // Newest first, by workspace: the list's order and its cursor.
  await db.schema
    .createIndex('audit_entries_workspace_seq_desc_idx')
    .on('audit_entries')
    .columns(['workspace_id', 'seq desc'])
    .execute();
  await db.schema
    .createIndex('audit_entries_workspace_time_idx')
    .on('audit_entries')
    .columns(['workspace_id', 'time'])
    .execute();
  await db.schema
    .createTable('audit_heads')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addColumn('anchor_seq', 'integer', (c) => c.notNull().defaultTo(sql`0`))
    .addColumn('anchor_hash', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
}
