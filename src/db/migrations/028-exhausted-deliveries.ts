import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * `exhausted_deliveries` (docs/api.md#platform-events): one row per event and endpoint whose delivery used all its
 * retries, written in the worker's transaction with the `delivery.exhausted` event it causes. A second exhaustion
 * of the same event at the same endpoint (a resend that failed again) finds the row and sends nothing. Purged with
 * the events after 30 days.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .createTable('exhausted_deliveries')
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('exhausted_deliveries_pk', ['event_id', 'webhook_id'])
    .execute();
}
