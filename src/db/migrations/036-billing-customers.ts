import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * `billing_customers` (docs/billing.md#payments-with-stripe): a workspace's Stripe Customer, created once, and the
 * card an admin saved on Stripe's hosted page: only Stripe's ids and the card's brand, last 4 digits and expiry.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .createTable('billing_customers')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey())
    .addColumn('customer_id', 'text', (c) => c.notNull().unique())
    .addColumn('payment_method_id', 'text')
    .addColumn('card_brand', 'text')
    .addColumn('card_last4', 'text')
    .addColumn('card_exp_month', 'integer')
    .addColumn('card_exp_year', 'integer')
    .addColumn('card_updated_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
}
