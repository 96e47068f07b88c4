import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * `usage_notices` (docs/billing.md#notifications): one row per workspace, period and threshold
 * (50, 80, 100 % of the plan's included requests) once its notification has been written. The
 * primary key makes each threshold notify exactly once per period, also with several workers
 * (insert … on conflict do nothing, in the transaction that writes the notification).
 * Owned by the billing module.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .createTable('usage_notices')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('period_start', ts, (c) => c.notNull())
    .addColumn('threshold', 'integer', (c) => c.notNull())
    .addColumn('billable_requests', 'bigint', (c) => c.notNull())
    .addColumn('included_requests', 'bigint', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_notices_pk', ['workspace_id', 'period_start', 'threshold'])
    .execute();
}
