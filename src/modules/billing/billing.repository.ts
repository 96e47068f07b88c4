import type { Db } from '../../db/dialect.js';
import { batchAfterId } from '../../db/keyset.js';
import { withRowLock } from '../../db/row-locks.js';
import type {
  InvoiceLinesTable,
  InvoiceStatus,
  InvoicesTable,
  NewInvoice,
  NewSubscription,
  SubscriptionChangesTable,
  SubscriptionsTable,
  UsageNoticesTable,
} from '../../db/types.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

/** SQL for subscriptions, subscription_changes, invoices and invoice_lines (docs/billing.md). */
export const billingRepository = {
  /** A batch of the workspace's invoices after `afterId`, oldest first (an export). */
  exportBatch: (db: Db, workspaceId: string, afterId: string | null, limit: number) =>
    batchAfterId(db, 'invoices', workspaceId, afterId, limit),
  /** A workspace's subscription; nothing if it has one already. `trx`: the workspace's creation. */
  async insertSubscription(trx: WriteTx, row: NewSubscription): Promise<void> {
    await trx
      .insertInto('subscriptions')
      .values({ ...row, payment_state: 'active', unpaid_since: null })
      .onConflict((oc) => oc.column('workspace_id').doNothing())
      .execute();
  },

  /** The subscription, row-locked until `db`'s transaction ends when `lock` (PostgreSQL). */
  async subscription(db: Db, workspaceId: string, lock = false): Promise<SubscriptionsTable | undefined> {
    const q = db.selectFrom('subscriptions').selectAll().where('workspace_id', '=', workspaceId);
    return (lock ? withRowLock(db, q) : q).executeTakeFirst();
  },

  /** Every subscription (the invoicing job walks them). */
  allSubscriptions(db: Db): Promise<SubscriptionsTable[]> {
    return db.selectFrom('subscriptions').selectAll().orderBy('workspace_id').execute();
  },

  async updateSubscription(
    trx: WriteTx,
    workspaceId: string,
    patch: Partial<
      Pick<
        SubscriptionsTable,
        'plan' | 'pending_plan' | 'pending_from' | 'updated_at' | 'payment_state' | 'unpaid_since'
      >
    >,
  ): Promise<void> {
    await trx.updateTable('subscriptions').set(patch).where('workspace_id', '=', workspaceId).execute();
  },

  async insertChange(trx: WriteTx, row: SubscriptionChangesTable): Promise<void> {
    await trx.insertInto('subscription_changes').values(row).execute();
  },

  /** Every change of a workspace's plan, oldest first. */
  changes(db: Db, workspaceId: string): Promise<SubscriptionChangesTable[]> {
    return db
      .selectFrom('subscription_changes')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .orderBy('effective_at')
      .orderBy('id')
      .execute();
  },

  /** The workspace's latest invoice (highest number). */
  lastInvoice(db: Db, workspaceId: string): Promise<Pick<InvoicesTable, 'number' | 'period_start'> | undefined> {
    return db
      .selectFrom('invoices')
      .select(['number', 'period_start'])
      .where('workspace_id', '=', workspaceId)
      .orderBy('number', 'desc')
      .limit(1)
      .executeTakeFirst();
  },

  /**
   * Inserts a finalized invoice unless the workspace has one for that period or that number already
   * (another worker finalized it): INSERT … ON CONFLICT DO NOTHING, which on PostgreSQL waits for
   * the other transaction and then does nothing. Returns whether this one was inserted.
   */
  /** Records a usage threshold as notified; false when it already was (another worker, an earlier run). */
  async insertUsageNotice(trx: WriteTx, row: UsageNoticesTable): Promise<boolean> {
    const inserted = await trx
      .insertInto('usage_notices')
      .values(row)
      .onConflict((oc) => oc.doNothing())
      .returning('threshold')
      .executeTakeFirst();
    return inserted !== undefined;
  },

  /** The thresholds already notified for a workspace's period. */
  async usageNotices(db: Db, workspaceId: string, periodStart: string): Promise<number[]> {
    const rows = await db
      .selectFrom('usage_notices')
      .select('threshold')
      .where('workspace_id', '=', workspaceId)
      .where('period_start', '=', periodStart)
      .execute();
    return rows.map((r) => Number(r.threshold));
  },

  async insertInvoice(trx: WriteTx, row: NewInvoice, lines: InvoiceLinesTable[]): Promise<boolean> {
    const inserted = await trx
      .insertInto('invoices')
      .values({
        ...row,
        payment_status: 'none',
        payment_attempts: 0,
        first_failed_at: null,
        next_charge_at: null,
        refunded_cents: 0,
      })
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) return false;
    if (lines.length > 0) await trx.insertInto('invoice_lines').values(lines).execute();
    return true;
  },

  /** A page of a workspace's invoices, newest (highest number) first, after the invoice `afterId`. */
  async listInvoices(
    db: Db,
    workspaceId: string,
    page: { limit: number; offset: number; afterId: string | null },
  ): Promise<{ rows: InvoicesTable[]; total: number; before: number }> {
    const totalRow = await db
      .selectFrom('invoices')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst();
    const total = Number(totalRow?.n ?? 0);
    let q = db
      .selectFrom('invoices')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .orderBy('number', 'desc')
      .limit(page.limit + 1);
    let before = page.offset;
    if (page.afterId !== null) {
      const after = await db
        .selectFrom('invoices')
        .select('number')
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', page.afterId)
        .executeTakeFirst();
      const n = after ? Number(after.number) : 0;
      q = q.where('number', '<', n);
      before = total - n + 1;
    } else if (page.offset > 0) {
      q = q.offset(page.offset);
    }
    return { rows: await q.execute(), total, before };
  },

  /** The lines of these invoices, in order. */
  lines(db: Db, invoiceIds: string[]): Promise<InvoiceLinesTable[]> {
    if (invoiceIds.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('invoice_lines')
      .selectAll()
      .where('invoice_id', 'in', invoiceIds)
      .orderBy('invoice_id')
      .orderBy('position')
      .execute();
  },

  invoice(db: Db, id: string): Promise<InvoicesTable | undefined> {
    return db.selectFrom('invoices').selectAll().where('id', '=', id).executeTakeFirst();
  },

  /** The invoice, row-locked until `trx` ends (PostgreSQL): one change at a time moves its payment. */
  lockedInvoice(trx: WriteTx, id: string): Promise<InvoicesTable | undefined> {
    return withRowLock(trx, trx.selectFrom('invoices').selectAll().where('id', '=', id)).executeTakeFirst();
  },

  /**
   * Open invoices with a total above 0 that are due a charge at `now`: never charged, or failed with a retry due
   * (`workspaceId`: only that workspace's, whatever their retry time: a new card retries at once).
   */
  chargeable(db: Db, now: string, workspaceId?: string): Promise<InvoicesTable[]> {
    let q = db
      .selectFrom('invoices')
      .selectAll()
      .where('status', 'in', workspaceId === undefined ? ['open'] : ['open', 'uncollectible'])
      .where('total_cents', '>', 0)
      .where((eb) =>
        eb.or([
          eb('payment_status', '=', 'none'),
          workspaceId === undefined
            ? eb.and([eb('payment_status', 'in', ['failed', 'requires_action']), eb('next_charge_at', '<=', now)])
            : eb('payment_status', 'in', ['failed', 'requires_action']),
        ]),
      );
    if (workspaceId !== undefined) q = q.where('workspace_id', '=', workspaceId);
    return q.orderBy('finalized_at').execute();
  },

  /** An invoice's payment columns (and its status, when the payment settles it). */
  async updatePayment(
    trx: WriteTx,
    id: string,
    patch: Partial<
      Pick<
        InvoicesTable,
        | 'status'
        | 'paid_at'
        | 'payment_status'
        | 'payment_attempts'
        | 'first_failed_at'
        | 'next_charge_at'
        | 'refunded_cents'
      >
    >,
  ): Promise<void> {
    await trx.updateTable('invoices').set(patch).where('id', '=', id).execute();
  },

  /** Moves an open invoice to paid or void; returns whether it was open. Amounts never change. */
  async settle(trx: WriteTx, id: string, status: Exclude<InvoiceStatus, 'open'>, at: string): Promise<boolean> {
    const r = await trx
      .updateTable('invoices')
      .set(status === 'paid' ? { status, paid_at: at } : { status, voided_at: at })
      .where('id', '=', id)
      // An uncollectible invoice can still be paid by hand (an operator's mark-paid), never voided.
      .where('status', 'in', status === 'paid' ? ['open', 'uncollectible'] : ['open'])
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },
};
