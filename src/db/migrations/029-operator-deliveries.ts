import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * `operator_deliveries` (docs/api.md#operator-events): the instance-wide events sent to OPERATOR_WEBHOOK_URL, one row
 * per event, written in the transaction of the change that causes it and claimed by the delivery worker like an
 * endpoint's delivery. The row holds the exact body (`payload`), so every attempt sends and signs the same bytes.
 * `workspace_id` has no foreign key: a `workspace.deleted` event outlives its workspace.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .createTable('operator_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempt_count', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', ts)
    .addColumn('lease_until', ts)
    .addColumn('leased_by', 'text')
    .addColumn('last_response_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  // The claim: pending rows due now, oldest due first.
  await db.schema
    .createIndex('operator_deliveries_due_idx')
    .on('operator_deliveries')
    .columns(['status', 'next_attempt_at', 'id'])
    .execute();
}
