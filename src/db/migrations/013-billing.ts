import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Plans and billing (docs/billing.md):
 * - `subscriptions`: one per workspace (its plan, the anchor of its monthly periods, a downgrade
 *   waiting for the period's end); every workspace that exists now gets `free`, billed from now on.
 * - `subscription_changes`: each plan change, with the proration an upgrade owes (stored when it
 *   happens, so the invoice does not depend on the plans in force when it is finalized).
 * - `invoices` and `invoice_lines`: finalized invoices; one per workspace and period (unique), numbered
 *   INV-1, INV-2, … per workspace (unique), never changed except their status.
 * Money is integer cents; amounts and counts are bigint (a PostgreSQL integer ends at $21 million).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .createTable('subscriptions')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('anchor_at', ts, (c) => c.notNull())
    .addColumn('pending_plan', 'text')
    .addColumn('pending_from', ts)
    .addColumn('started_at', ts, (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('subscription_changes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('from_plan', 'text', (c) => c.notNull())
    .addColumn('to_plan', 'text', (c) => c.notNull())
    .addColumn('period_start', ts, (c) => c.notNull())
    .addColumn('effective_at', ts, (c) => c.notNull())
    .addColumn('seconds_left', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('period_seconds', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('proration_cents', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('subscription_changes_period_idx')
    .on('subscription_changes')
    .columns(['workspace_id', 'period_start'])
    .execute();

  await db.schema
    .createTable('invoices')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('period_start', ts, (c) => c.notNull())
    .addColumn('period_end', ts, (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('billable_requests', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('total_cents', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('finalized_at', ts, (c) => c.notNull())
    .addColumn('paid_at', ts)
    .addColumn('voided_at', ts)
    .addUniqueConstraint('invoices_period_key', ['workspace_id', 'period_start'])
    .addUniqueConstraint('invoices_number_key', ['workspace_id', 'number'])
    .execute();

  await db.schema
    .createTable('invoice_lines')
    .addColumn('invoice_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('quantity', 'bigint', (c) => c.notNull())
    .addColumn('unit_price_cents', 'bigint', (c) => c.notNull())
    .addColumn('amount_cents', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('invoice_lines_pkey', ['invoice_id', 'position'])
    .execute();

  // Workspaces created before billing: free, periods anchored at their creation, billed from now.
  const now = new Date().toISOString();
  await sql`insert into subscriptions (workspace_id, plan, anchor_at, started_at, created_at, updated_at)
    select id, 'free', created_at, ${now}, ${now}, ${now} from workspaces`.execute(db);
}
