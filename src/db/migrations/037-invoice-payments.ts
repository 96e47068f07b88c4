import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Invoice payments (docs/billing.md#payments-with-stripe): on `invoices`, where its charge stands
 * (`payment_status`), how many attempts were begun, when the next one is due (dunning) and what was refunded; and
 * `invoice_payment_attempts`, one row per attempt, written before Stripe is called so a restart reuses the same
 * idempotency key (`<invoice id>-attempt-<n>`) and never charges twice.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .alterTable('invoices')
    .addColumn('payment_status', 'text', (c) => c.notNull().defaultTo('none'))
    .execute();
  await db.schema
    .alterTable('invoices')
    .addColumn('payment_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('invoices').addColumn('first_failed_at', ts).execute();
  await db.schema.alterTable('invoices').addColumn('next_charge_at', ts).execute();
  await db.schema
    .alterTable('invoices')
    .addColumn('refunded_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('invoices_payment_status_idx').on('invoices').columns(['payment_status']).execute();

  await db.schema
    .createTable('invoice_payment_attempts')
    .addColumn('invoice_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull())
    .addColumn('payment_method_id', 'text', (c) => c.notNull())
    .addColumn('payment_intent_id', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('decline_code', 'text')
    .addColumn('message', 'text')
    .addColumn('started_at', ts, (c) => c.notNull())
    .addColumn('finished_at', ts)
    .addPrimaryKeyConstraint('invoice_payment_attempts_pkey', ['invoice_id', 'attempt'])
    .execute();
  await db.schema
    .createIndex('invoice_payment_attempts_pi_idx')
    .on('invoice_payment_attempts')
    .column('payment_intent_id')
    .execute();
}
