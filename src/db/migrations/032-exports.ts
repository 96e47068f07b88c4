import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * `exports` (docs/data-lifecycle.md#export): one row per archive an admin asked for: its status, its progress
 * (kinds done, rows written), the finished file's size and SHA-256, when its download expires, and the lease of
 * the worker run writing it (a run that lost its lease, killed say, is started again from scratch).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .createTable('exports')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('env', 'text')
    .addColumn('requested_by', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('kinds_done', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('kinds_total', 'integer', (c) => c.notNull())
    .addColumn('rows_written', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('size_bytes', 'bigint')
    .addColumn('sha256', 'text')
    .addColumn('error', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('leased_by', 'text')
    .addColumn('lease_until', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('started_at', ts)
    .addColumn('finished_at', ts)
    .addColumn('expires_at', ts)
    .execute();
  await db.schema.createIndex('exports_workspace').on('exports').columns(['workspace_id', 'created_at']).execute();
  await db.schema.createIndex('exports_status').on('exports').columns(['status']).execute();
}
