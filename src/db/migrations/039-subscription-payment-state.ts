import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * `subscriptions.payment_state` (docs/billing.md#payments-with-stripe): `unpaid` once an invoice became
 * uncollectible after the last charge of the dunning schedule (live /v1 requests answer 402 payment_required),
 * `active` again when an invoice is paid.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .alterTable('subscriptions')
    .addColumn('payment_state', 'text', (c) => c.notNull().defaultTo('active'))
    .execute();
  await db.schema.alterTable('subscriptions').addColumn('unpaid_since', ts).execute();
}
