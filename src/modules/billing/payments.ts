import type Stripe from 'stripe';
import type { InvoicePaymentAttemptsTable, InvoicesTable } from '../../db/types.js';
import { isoAt } from '../../kernel/clock.js';
import { AppError, ConflictError, fieldError, NotFoundError } from '../../kernel/errors.js';
import { type Principal, requireAdmin } from '../../kernel/principal.js';
import type { InvoiceNoticeData } from '../../platform/domain-events.js';
import type { Change, Unit } from '../../platform/unit-of-work.js';
import { billingRepository as repo } from './billing.repository.js';
import type { BillingDeps } from './billing-deps.js';
import { paymentsRepository as payRepo } from './payments.repository.js';
import { type ChargeOutcome, outcomeOfPaymentIntent, type PaymentGateway, type SavedCard } from './stripe-gateway.js';

const DAY_MS = 86_400_000;
/**
 * A change that may make the subscription unpaid or active again: API keys carry that state (their live requests
 * answer 402 payment_required while it is unpaid), so every process re-verifies its cached keys after it.
 */
export const PAYMENT_STATE = { changesKeys: true } as const;
/** A PaymentIntent still processing this long after its attempt began is read back by the settle job. */
export const SETTLE_AFTER_MS = 15 * 60_000;

/** What an invoice's notices and catalogue events say of it. */
export function invoiceData(row: InvoicesTable, at: string): InvoiceNoticeData {
  return {
    invoice_id: row.id,
    number: `INV-${row.number}`,
    plan: row.plan,
    total_cents: Number(row.total_cents),
    currency: row.currency,
    period_start: isoAt(Date.parse(row.period_start)),
    period_end: isoAt(Date.parse(row.period_end)),
    at,
  };
}

/**
 * Payments with Stripe (docs/billing.md#payments-with-stripe): the workspace's Customer, the charge of finalized
 * invoices (one PaymentIntent per attempt, its idempotency key `<invoice id>-attempt-<n>` recorded before the call),
 * what an answer or an event does to the invoice, and dunning. Off (every function a no-op) without a gateway.
 */
export function createPayments(deps: BillingDeps) {
  const { db, clock } = deps;
  const gateway = deps.gateway;
  const now = () => isoAt(clock.now());
  /** The console's billing page of a workspace. */
  const billingPage = (workspaceId: string) => `${deps.consoleUrl()}/console/w/${workspaceId}/live/settings/billing`;

  /** The workspace's Stripe Customer id, created once (two at once: Stripe's idempotency key makes them one). */
  async function customerOf(u: Unit, workspaceId: string, g: PaymentGateway): Promise<string> {
    const known = await payRepo.customer(db, workspaceId);
    if (known) return known.customer_id;
    const customerId = await g.createCustomer(workspaceId, `Workspace ${workspaceId}`);
    return u.run(async ({ trx }) => {
      await payRepo.insertCustomer(trx, {
        workspace_id: workspaceId,
        customer_id: customerId,
        payment_method_id: null,
        card_brand: null,
        card_last4: null,
        card_exp_month: null,
        card_exp_year: null,
        card_updated_at: null,
        created_at: now(),
      });
      return ((await payRepo.customer(trx, workspaceId)) ?? { customer_id: customerId }).customer_id;
    });
  }

  /**
   * Begins attempt n+1 of an invoice still due a charge, in its own change: the attempt's row (what it will ask
   * Stripe, under which key) is committed before Stripe is called. Null when nothing is due (paid, another worker).
   */
  async function begin(u: Unit, invoiceId: string, force: boolean): Promise<InvoicePaymentAttemptsTable | null> {
    return u.run(async ({ trx }) => {
      const inv = await repo.lockedInvoice(trx, invoiceId);
      const open = inv?.status === 'open' || (force && inv?.status === 'uncollectible');
      if (!inv || !open || Number(inv.total_cents) <= 0) return null;
      const due =
        inv.payment_status === 'none' ||
        ((inv.payment_status === 'failed' || inv.payment_status === 'requires_action') &&
          (force || (inv.next_charge_at !== null && Date.parse(inv.next_charge_at) <= clock.now())));
      if (!due) return null;
      const customer = await payRepo.customer(trx, inv.workspace_id);
      if (!customer?.payment_method_id) return null;
      const attempt: InvoicePaymentAttemptsTable = {
        invoice_id: inv.id,
        attempt: Number(inv.payment_attempts) + 1,
        workspace_id: inv.workspace_id,
        amount_cents: Number(inv.total_cents),
        customer_id: customer.customer_id,
        payment_method_id: customer.payment_method_id,
        payment_intent_id: null,
        outcome: 'pending',
        decline_code: null,
        message: null,
        started_at: now(),
        finished_at: null,
      };
      await payRepo.insertAttempt(trx, attempt);
      await repo.updatePayment(trx, inv.id, {
        payment_attempts: attempt.attempt,
        payment_status: 'processing',
        next_charge_at: null,
      });
      return attempt;
    });
  }

  /** Sends an attempt to Stripe (again, after a restart: the same key and body get the same answer) and records it. */
  async function send(u: Unit, a: InvoicePaymentAttemptsTable, g: PaymentGateway): Promise<ChargeOutcome> {
    const outcome = await g.charge({
      invoiceId: a.invoice_id,
      attempt: Number(a.attempt),
      amountCents: Number(a.amount_cents),
      customerId: a.customer_id,
      paymentMethodId: a.payment_method_id,
    });
    await u.run((c) => record(c, a.invoice_id, Number(a.attempt), outcome), PAYMENT_STATE);
    return outcome;
  }

  /**
   * Applies an attempt's outcome (the charge's answer, a webhook event, the settle job): recorded once per attempt;
   * a final outcome is never undone, and nothing moves an invoice that is no longer open.
   */
  async function record(c: Change, invoiceId: string, attemptNo: number, o: ChargeOutcome): Promise<boolean> {
    const { trx } = c;
    const inv = await repo.lockedInvoice(trx, invoiceId);
    if (!inv) return false;
    const at = now();
    const recorded = await payRepo.finishAttempt(trx, invoiceId, attemptNo, {
      payment_intent_id: o.paymentIntentId,
      outcome: o.status,
      decline_code: o.declineCode,
      message: o.message,
      finished_at: o.status === 'processing' ? null : at,
    });
    const payable = inv.status === 'open' || inv.status === 'uncollectible';
    if (!recorded || !payable || o.status === 'processing') return recorded;
    // A later attempt has begun: this older one's answer says nothing of the invoice any more.
    if (Number(inv.payment_attempts) !== attemptNo) return recorded;
    if (o.status === 'succeeded') {
      await repo.updatePayment(trx, invoiceId, {
        status: 'paid',
        paid_at: at,
        payment_status: 'succeeded',
        next_charge_at: null,
      });
      c.audit.record({
        action: 'invoice.payment_succeeded',
        workspaceId: inv.workspace_id,
        target: { type: 'invoice', id: inv.id },
        env: null,
        changes: {
          status: { before: inv.status, after: 'paid' },
          payment_status: { before: inv.payment_status, after: 'succeeded' },
        },
      });
      await c.emit({
        type: 'invoice.settled',
        workspaceId: inv.workspace_id,
        status: 'paid',
        data: invoiceData(inv, at),
      });
      return true;
    }
    await failed(c, inv, attemptNo, o, at);
    return true;
  }

  /** A failed attempt: the next retry of the dunning schedule, or, after the last, the invoice uncollectible. */
  async function failed(c: Change, inv: InvoicesTable, attemptNo: number, o: ChargeOutcome, at: string) {
    const first = inv.first_failed_at ?? at;
    const failures = await payRepo.failures(c.trx, inv.id);
    const days = deps.dunningDays;
    const next = failures <= days.length ? isoAt(Date.parse(first) + (days[failures - 1] ?? 0) * DAY_MS) : null;
    await repo.updatePayment(c.trx, inv.id, {
      payment_status: o.status === 'requires_action' ? 'requires_action' : 'failed',
      first_failed_at: first,
      next_charge_at: next,
      ...(next === null ? { status: 'uncollectible' as const } : {}),
    });
    c.audit.record({
      action: 'invoice.payment_failed',
      workspaceId: inv.workspace_id,
      target: { type: 'invoice', id: inv.id },
      env: null,
      changes: {
        payment_status: { before: inv.payment_status, after: o.status },
        attempt: { before: null, after: attemptNo },
        decline_code: { before: null, after: o.declineCode },
        next_payment_attempt_at: { before: inv.next_charge_at, after: next },
        ...(next === null ? { status: { before: inv.status, after: 'uncollectible' } } : {}),
      },
    });
    await c.emit({ type: 'invoice.payment_failed', workspaceId: inv.workspace_id, data: invoiceData(inv, at) });
    // Each failure tells the admins, with the link to the billing page where the card is replaced.
    await c.emit({
      type: 'billing.notice',
      notice: {
        type: 'invoice.payment_failed',
        workspaceId: inv.workspace_id,
        data: { ...invoiceData(inv, at), decline_code: o.declineCode, message: o.message, next_attempt_at: next },
      },
    });
    if (next === null) await unpaid(c, inv, at);
  }

  /** The last charge failed: the subscription is unpaid (live /v1 requests answer 402) until an invoice is paid. */
  async function unpaid(c: Change, inv: InvoicesTable, at: string) {
    const sub = await repo.subscription(c.trx, inv.workspace_id, true);
    if (!sub || sub.payment_state === 'unpaid') return;
    await repo.updateSubscription(c.trx, inv.workspace_id, {
      payment_state: 'unpaid',
      unpaid_since: at,
      updated_at: at,
    });
    c.audit.record({
      action: 'subscription.unpaid',
      workspaceId: inv.workspace_id,
      target: { type: 'subscription', id: inv.workspace_id },
      env: null,
      changes: { payment_state: { before: 'active', after: 'unpaid' }, invoice_id: { before: null, after: inv.id } },
    });
    await c.emit({ type: 'subscription.unpaid', workspaceId: inv.workspace_id, invoiceId: inv.id, at });
  }

  /** An invoice was paid (by card or by hand): an unpaid subscription is active again. */
  async function reactivate(c: Change, workspaceId: string, invoiceId: string, at: string) {
    const sub = await repo.subscription(c.trx, workspaceId, true);
    if (sub?.payment_state !== 'unpaid') return;
    await repo.updateSubscription(c.trx, workspaceId, { payment_state: 'active', unpaid_since: null, updated_at: at });
    c.audit.record({
      action: 'subscription.reactivated',
      workspaceId,
      target: { type: 'subscription', id: workspaceId },
      env: null,
      changes: { payment_state: { before: 'unpaid', after: 'active' }, invoice_id: { before: null, after: invoiceId } },
    });
    await c.emit({ type: 'subscription.reactivated', workspaceId, invoiceId, at });
  }

  /** Stores a saved card for the workspace (ids, brand, last 4, expiry); false when it is the card already stored. */
  async function storeCard(c: Change, workspaceId: string, card: SavedCard): Promise<boolean> {
    const before = await payRepo.customer(c.trx, workspaceId);
    if (before?.payment_method_id === card.paymentMethodId) return false;
    await payRepo.updateCard(c.trx, workspaceId, {
      payment_method_id: card.paymentMethodId,
      card_brand: card.brand,
      card_last4: card.last4,
      card_exp_month: card.expMonth,
      card_exp_year: card.expYear,
      card_updated_at: now(),
    });
    const shown = (r: typeof before) =>
      r?.card_last4 ? `${r.card_brand} •••• ${r.card_last4} ${r.card_exp_month}/${r.card_exp_year}` : null;
    c.audit.record({
      action: 'payment_method.updated',
      workspaceId,
      target: { type: 'payment_method', id: card.paymentMethodId },
      env: null,
      changes: {
        card: { before: shown(before), after: `${card.brand} •••• ${card.last4} ${card.expMonth}/${card.expYear}` },
      },
    });
    return true;
  }

  /** What Stripe says of one of our PaymentIntents, in `c`; false when it is none of ours or changes nothing. */
  async function applyPaymentIntent(c: Change, pi: Stripe.PaymentIntent): Promise<boolean> {
    const a = await payRepo.attemptByPaymentIntent(c.trx, pi.id);
    if (!a || (pi.metadata?.invoice_id !== undefined && pi.metadata.invoice_id !== a.invoice_id)) return false;
    return record(c, a.invoice_id, Number(a.attempt), outcomeOfPaymentIntent(pi));
  }

  /** The events that change something; every other type is answered 2xx and only its id recorded. */
  const PAYMENT_INTENT_EVENTS = new Set([
    'payment_intent.succeeded',
    'payment_intent.payment_failed',
    'payment_intent.processing',
  ]);

  const service = {
    /** The billing subscriber's reaction to a paid invoice (src/modules/billing/billing.service.ts). */
    reactivate,

    /**
     * POST /stripe/webhook: the event whose `Stripe-Signature` matches the raw body (HMAC-SHA256, 5 minutes'
     * tolerance on the injected clock), processed once per event id; a late or repeated event never undoes a later
     * state. 400 `invalid_signature` (nothing changed) otherwise; 404 with payments off.
     */
    async receiveEvent(u: Unit, rawBody: string, signature: string | undefined): Promise<void> {
      if (!gateway) throw new NotFoundError('route');
      let event: Stripe.Event;
      try {
        if (!signature) throw new Error('no signature');
        event = gateway.event(rawBody, signature, clock.now());
      } catch {
        throw new AppError(
          400,
          'invalid_signature',
          'The Stripe-Signature header is missing, does not match the body, or is more than 5 minutes old.',
        );
      }
      const at = now();
      if (event.type === 'checkout.session.completed') {
        if (await payRepo.eventSeen(db, event.id)) return;
        const session = event.data.object as Stripe.Checkout.Session;
        const customerId = typeof session.customer === 'string' ? session.customer : session.customer?.id;
        const owner = customerId ? await payRepo.customerById(db, customerId) : undefined;
        // The card is read from Stripe before the change (no call inside a transaction).
        const card = owner && session.mode === 'setup' ? await gateway.setupSessionCard(session.id) : null;
        const stored = await u.run(async (c) => {
          if (!(await payRepo.recordEvent(c.trx, event.id, event.type, at))) return false;
          return owner && card && card.customerId === owner.customer_id
            ? storeCard(c, owner.workspace_id, card)
            : false;
        });
        if (stored && owner) await service.chargeDue(u, owner.workspace_id).catch(() => undefined);
        return;
      }
      await u.run(async (c) => {
        if (!(await payRepo.recordEvent(c.trx, event.id, event.type, at))) return;
        if (PAYMENT_INTENT_EVENTS.has(event.type)) {
          await applyPaymentIntent(c, event.data.object as Stripe.PaymentIntent);
        }
      }, PAYMENT_STATE);
    },

    /**
     * The console's "Add a card" / "Replace card" (admins only): a Checkout Session in setup mode for the workspace's
     * Customer, returning to the console; its hosted page's URL. 404 with payments off.
     */
    async startCardSetup(u: Unit<Principal>): Promise<{ url: string }> {
      requireAdmin(u.actor);
      if (!gateway) throw new NotFoundError('route');
      const customerId = await customerOf(u, u.actor.workspaceId, gateway);
      const ws = u.actor.workspaceId;
      // The browser comes back by a plain navigation, without the console's X-Workspace-Id header: the return names
      // its workspace in the query (the session must still belong to that workspace's Customer).
      return gateway.setupSession({
        customerId,
        successUrl: `${deps.consoleUrl()}/console/api/billing/card/return?ws=${ws}&session_id={CHECKOUT_SESSION_ID}`,
        cancelUrl: billingPage(ws),
      });
    },

    /** The return from Checkout (admins only): the session's card stored; where the browser goes next. */
    async finishCardSetup(u: Unit<Principal>, sessionId: string): Promise<string> {
      requireAdmin(u.actor);
      if (!gateway) throw new NotFoundError('route');
      const saved = await service.saveCard(u, u.actor.workspaceId, sessionId);
      return `${billingPage(u.actor.workspaceId)}?card=${saved ? 'saved' : 'unchanged'}`;
    },

    /** The workspace's card as the console shows it (brand, last 4, expiry), or null. */
    async card(p: Principal): Promise<{ brand: string; last4: string; exp_month: number; exp_year: number } | null> {
      const c = await payRepo.customer(db, p.workspaceId);
      if (!c?.card_last4 || !c.card_brand) return null;
      return {
        brand: c.card_brand,
        last4: c.card_last4,
        exp_month: Number(c.card_exp_month),
        exp_year: Number(c.card_exp_year),
      };
    },

    /**
     * `wsvc billing refund` (an operator): a Stripe Refund of the invoice's successful charge, all that is left of it
     * or `amountCents`; the invoice's `refunded_cents` grows by it. 409 when payments are off or the invoice was not
     * charged by card, 400 for an amount over what is left.
     */
    async refund(u: Unit, invoiceId: string, amountCents?: number): Promise<number> {
      if (!gateway)
        throw new ConflictError('payments_off', 'Payments with Stripe are off: there is no charge to refund.');
      const inv = await repo.invoice(db, invoiceId);
      if (!inv) throw new NotFoundError('invoice');
      const paid = (await payRepo.attemptsOf(db, [inv.id])).find((a) => a.outcome === 'succeeded');
      if (!paid?.payment_intent_id) {
        throw new ConflictError(
          'invoice_not_charged',
          `Invoice INV-${inv.number} was not paid by card; nothing to refund.`,
        );
      }
      const refunded = Number(inv.refunded_cents);
      const left = Number(inv.total_cents) - refunded;
      const amount = amountCents ?? left;
      if (!Number.isInteger(amount) || amount <= 0 || amount > left) {
        throw fieldError(
          'amount_cents',
          'out_of_range',
          left <= 0
            ? `Invoice INV-${inv.number} is already refunded in full (${refunded} cents): nothing is left to refund.`
            : `amount_cents must be from 1 to ${left}, what is left to refund of INV-${inv.number} (${refunded} of ${Number(inv.total_cents)} cents refunded so far).`,
        );
      }
      // The key names the state it refunds from: a retry of the same command is the same Refund.
      const r = await gateway.refund({
        paymentIntentId: paid.payment_intent_id,
        amountCents: amount,
        idempotencyKey: `${inv.id}-refund-${refunded}-${amount}`,
      });
      await u.run(async ({ trx, audit }) => {
        const now = await repo.lockedInvoice(trx, inv.id);
        if (!now || Number(now.refunded_cents) !== refunded) return;
        await repo.updatePayment(trx, inv.id, { refunded_cents: refunded + r.amount });
        audit.record({
          action: 'invoice.refunded',
          workspaceId: inv.workspace_id,
          target: { type: 'invoice', id: inv.id },
          env: null,
          changes: { refunded_cents: { before: refunded, after: refunded + r.amount } },
        });
      });
      return r.amount;
    },

    /** Payments with Stripe are on (both settings given). */
    paymentsOn: gateway !== null,

    /** The workspace's Stripe Customer, created once; null with payments off. */
    async ensureCustomer(u: Unit, workspaceId: string): Promise<string | null> {
      return gateway ? customerOf(u, workspaceId, gateway) : null;
    },

    /**
     * The periodic job (`scheduler:billing-payments`): attempts left unanswered are sent again with their own key,
     * then every open invoice due a charge (never charged, or a retry due) is charged. Returns how many attempts it
     * made. A call that fails (Stripe unreachable) leaves its attempt pending for the next run.
     */
    async chargeDue(u: Unit, workspaceId?: string): Promise<number> {
      if (!gateway) return 0;
      let n = 0;
      let error: unknown;
      const attempt = async (a: InvoicePaymentAttemptsTable) => {
        try {
          await send(u, a, gateway);
          n++;
        } catch (err) {
          // Stripe unreachable, or this process stopped: the attempt stays pending and is sent again, same key.
          error ??= err;
        }
      };
      for (const a of await payRepo.pendingAttempts(db)) {
        if (workspaceId === undefined || a.workspace_id === workspaceId) await attempt(a);
      }
      for (const inv of await repo.chargeable(db, now(), workspaceId)) {
        const a = await begin(u, inv.id, workspaceId !== undefined);
        if (a) await attempt(a);
      }
      if (error !== undefined) throw error;
      return n;
    },

    /**
     * The card a completed Checkout Session in setup mode saved, stored for the workspace (ids, brand, last 4,
     * expiry); then a failed invoice is charged again at once. False when the session is not complete or is another
     * customer's (nothing changes).
     */
    async saveCard(u: Unit, workspaceId: string, sessionId: string): Promise<boolean> {
      if (!gateway) return false;
      const card = await gateway.setupSessionCard(sessionId);
      const customer = await payRepo.customer(db, workspaceId);
      if (!card || !customer || card.customerId !== customer.customer_id) return false;
      const changed = await u.run((c) => storeCard(c, workspaceId, card));
      // A new card retries the workspace's failed (or uncollectible) invoices at once.
      // A failed call leaves its attempt pending for the job; the card stays saved.
      if (changed) await service.chargeDue(u, workspaceId).catch(() => undefined);
      return changed;
    },

    /** The settle job: reads back every PaymentIntent still processing 15 minutes after its attempt began. */
    async settleProcessing(u: Unit): Promise<number> {
      if (!gateway) return 0;
      let n = 0;
      for (const a of await payRepo.processingAttempts(db, isoAt(clock.now() - SETTLE_AFTER_MS))) {
        if (!a.payment_intent_id) continue;
        const o = await gateway.paymentIntent(a.payment_intent_id);
        if (o.status === 'processing') continue;
        if (await u.run((c) => record(c, a.invoice_id, Number(a.attempt), o), PAYMENT_STATE)) n++;
      }
      return n;
    },
  };
  return service;
}
export type Payments = ReturnType<typeof createPayments>;
