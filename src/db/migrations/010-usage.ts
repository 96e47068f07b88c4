import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

/** Latency buckets per row, fixed here: src/modules/usage/buckets.ts must have as many. */
const BUCKET_COUNT = 16;

/**
 * Usage metering and the failed-request log (docs/usage.md):
 * - `usage_counts`: one row per workspace, environment, key, route template, status and period
 *   (`minute`, `hour` or `day`, its start as ISO text), with the request count, the latency sum and
 *   the count per fixed latency bucket (`b0`…). Processes add to a row with an upsert, so any
 *   number of them add up. Periods are ISO text on both databases so that the rollup and the
 *   queries compare and group them the same way.
 * - `request_log`: every 4xx/5xx answer to a key, kept 7 days; newest first by id (time-ordered).
 */
export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  let usage = db.schema
    .createTable('usage_counts')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('route', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('granularity', 'text', (c) => c.notNull())
    .addColumn('period_start', 'text', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addColumn('latency_sum_ms', 'double precision', (c) => c.notNull());
  for (let i = 0; i < BUCKET_COUNT; i++) usage = usage.addColumn(`b${i}`, 'bigint', (c) => c.notNull().defaultTo(0));
  await usage
    .addPrimaryKeyConstraint('usage_counts_pk', [
      'workspace_id',
      'env',
      'granularity',
      'period_start',
      'key_id',
      'route',
      'status',
    ])
    .execute();
  // The rollup scans one granularity by age across workspaces.
  await db.schema
    .createIndex('usage_counts_rollup_idx')
    .on('usage_counts')
    .columns(['granularity', 'period_start'])
    .execute();

  await db.schema
    .createTable('request_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('route', 'text', (c) => c.notNull())
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('error_code', 'text')
    .addColumn('error_message', 'text')
    .addColumn('latency_ms', 'double precision', (c) => c.notNull())
    .addColumn('body', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('request_log_scope_idx')
    .on('request_log')
    .columns(['workspace_id', 'env', 'id'])
    .execute();
  await db.schema
    .createIndex('request_log_request_id_idx')
    .on('request_log')
    .columns(['workspace_id', 'env', 'request_id'])
    .execute();
  await db.schema.createIndex('request_log_created_idx').on('request_log').column('created_at').execute();
}
