import type { Db } from '../../db/dialect.js';
import type { BillingCustomersTable, InvoicePaymentAttemptsTable } from '../../db/types.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

/** SQL for billing_customers and invoice_payment_attempts (docs/billing.md#payments-with-stripe). */
export const paymentsRepository = {
  customer(db: Db, workspaceId: string): Promise<BillingCustomersTable | undefined> {
    return db.selectFrom('billing_customers').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
  },

  customerById(db: Db, customerId: string): Promise<BillingCustomersTable | undefined> {
    return db.selectFrom('billing_customers').selectAll().where('customer_id', '=', customerId).executeTakeFirst();
  },

  /**
   * The workspace's Customer; nothing when it has one (a concurrent creation got there first, with the same Customer:
   * it conflicts on either unique column, whichever PostgreSQL checks first).
   */
  async insertCustomer(trx: WriteTx, row: BillingCustomersTable): Promise<void> {
    await trx
      .insertInto('billing_customers')
      .values(row)
      .onConflict((oc) => oc.doNothing())
      .execute();
  },

  async updateCard(
    trx: WriteTx,
    workspaceId: string,
    card: Pick<
      BillingCustomersTable,
      'payment_method_id' | 'card_brand' | 'card_last4' | 'card_exp_month' | 'card_exp_year' | 'card_updated_at'
    >,
  ): Promise<void> {
    await trx.updateTable('billing_customers').set(card).where('workspace_id', '=', workspaceId).execute();
  },

  async insertAttempt(trx: WriteTx, row: InvoicePaymentAttemptsTable): Promise<void> {
    await trx.insertInto('invoice_payment_attempts').values(row).execute();
  },

  /**
   * Records an attempt's answer unless one is recorded already (`pending` or `processing` only: a final outcome is
   * never undone). Returns whether it was recorded.
   */
  async finishAttempt(
    trx: WriteTx,
    invoiceId: string,
    attempt: number,
    patch: Pick<
      InvoicePaymentAttemptsTable,
      'payment_intent_id' | 'outcome' | 'decline_code' | 'message' | 'finished_at'
    >,
  ): Promise<boolean> {
    const r = await trx
      .updateTable('invoice_payment_attempts')
      .set(patch)
      .where('invoice_id', '=', invoiceId)
      .where('attempt', '=', attempt)
      .where('outcome', 'in', ['pending', 'processing'])
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  attempt(db: Db, invoiceId: string, attempt: number): Promise<InvoicePaymentAttemptsTable | undefined> {
    return db
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where('invoice_id', '=', invoiceId)
      .where('attempt', '=', attempt)
      .executeTakeFirst();
  },

  attemptByPaymentIntent(db: Db, paymentIntentId: string): Promise<InvoicePaymentAttemptsTable | undefined> {
    return db
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where('payment_intent_id', '=', paymentIntentId)
      .executeTakeFirst();
  },

  /** Attempts begun and never answered (a worker stopped between the call and its commit), oldest first. */
  pendingAttempts(db: Db): Promise<InvoicePaymentAttemptsTable[]> {
    return db
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where('outcome', '=', 'pending')
      .orderBy('started_at')
      .execute();
  },

  /** Attempts whose PaymentIntent is still processing and began before `before`. */
  processingAttempts(db: Db, before: string): Promise<InvoicePaymentAttemptsTable[]> {
    return db
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where('outcome', '=', 'processing')
      .where('started_at', '<=', before)
      .orderBy('started_at')
      .execute();
  },

  /** Records a webhook event as processed; false when it was already (sent twice, or by another process). */
  async recordEvent(trx: WriteTx, eventId: string, type: string, at: string): Promise<boolean> {
    const r = await trx
      .insertInto('stripe_events')
      .values({ event_id: eventId, type, received_at: at })
      .onConflict((oc) => oc.doNothing())
      .returning('event_id')
      .executeTakeFirst();
    return r !== undefined;
  },

  async eventSeen(db: Db, eventId: string): Promise<boolean> {
    return (
      (await db.selectFrom('stripe_events').select('event_id').where('event_id', '=', eventId).executeTakeFirst()) !==
      undefined
    );
  },

  /** How many of an invoice's attempts failed (declined or needing authentication). */
  async failures(db: Db, invoiceId: string): Promise<number> {
    const r = await db
      .selectFrom('invoice_payment_attempts')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('invoice_id', '=', invoiceId)
      .where('outcome', 'in', ['failed', 'requires_action'])
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  },

  /** The attempts of these invoices, in order. */
  attemptsOf(db: Db, invoiceIds: string[]): Promise<InvoicePaymentAttemptsTable[]> {
    if (invoiceIds.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('invoice_payment_attempts')
      .selectAll()
      .where('invoice_id', 'in', invoiceIds)
      .orderBy('invoice_id')
      .orderBy('attempt')
      .execute();
  },
};
