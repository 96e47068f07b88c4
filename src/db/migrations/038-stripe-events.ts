import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * `stripe_events` (docs/billing.md#payments-with-stripe): the id of every Stripe webhook event processed, written in
 * the change that processes it, so an event sent twice (or by two API processes at once) is processed once.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .createTable('stripe_events')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('received_at', ts, (c) => c.notNull())
    .execute();
}
