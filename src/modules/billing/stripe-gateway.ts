import Stripe from 'stripe';

/** How a charge of an invoice ended, as the service keeps it (never a client secret). */
export interface ChargeOutcome {
  paymentIntentId: string | null;
  status: 'succeeded' | 'processing' | 'failed' | 'requires_action';
  declineCode: string | null;
  message: string | null;
}

/** The card a Checkout Session in setup mode saved: ids and what may be shown, nothing else of the card. */
export interface SavedCard {
  customerId: string;
  paymentMethodId: string;
  brand: string;
  last4: string;
  expMonth: number;
  expYear: number;
}

/**
 * What the service asks of Stripe (docs/billing.md#payments-with-stripe), over the official `stripe` client. Built
 * by the wiring when STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET are set; tests point it at a stand-in with
 * STRIPE_API_BASE. Stripe's keys stay inside: no method returns or logs them.
 */
export interface PaymentGateway {
  /** The workspace's Customer, created once: the idempotency key comes from the workspace id. */
  createCustomer(workspaceId: string, name: string): Promise<string>;
  /** A PaymentIntent for one attempt (`<invoice>-attempt-<n>` as its idempotency key): the same key never charges twice. */
  charge(p: {
    invoiceId: string;
    attempt: number;
    amountCents: number;
    customerId: string;
    paymentMethodId: string;
  }): Promise<ChargeOutcome>;
  /** A PaymentIntent read back (the settle job). */
  paymentIntent(id: string): Promise<ChargeOutcome & { invoiceId: string | null }>;
  /** A Checkout Session in setup mode for the customer: its hosted page's URL. */
  setupSession(p: { customerId: string; successUrl: string; cancelUrl: string }): Promise<{ id: string; url: string }>;
  /** The card a completed setup session saved (session → SetupIntent → PaymentMethod); null while not complete. */
  setupSessionCard(sessionId: string): Promise<SavedCard | null>;
  /** A Refund of a PaymentIntent (all of it without `amountCents`). */
  refund(p: {
    paymentIntentId: string;
    amountCents?: number;
    idempotencyKey: string;
  }): Promise<{ id: string; amount: number }>;
  /** The event of a webhook request, its `Stripe-Signature` checked at `nowMs` (5 minutes' tolerance); throws otherwise. */
  event(rawBody: string, signature: string, nowMs: number): Stripe.Event;
}

/** What a PaymentIntent (an answer, or a webhook event's object) says of the charge. */
export function outcomeOfPaymentIntent(pi: Stripe.PaymentIntent): ChargeOutcome {
  const last = pi.last_payment_error;
  const status =
    pi.status === 'succeeded'
      ? 'succeeded'
      : pi.status === 'processing'
        ? 'processing'
        : pi.status === 'requires_action' || last?.code === 'authentication_required'
          ? 'requires_action'
          : 'failed';
  const settled = status === 'succeeded' || status === 'processing';
  return {
    paymentIntentId: pi.id,
    status,
    declineCode: settled ? null : (last?.decline_code ?? last?.code ?? null),
    message: settled ? null : (last?.message ?? null),
  };
}

/** The gateway over the official client; `apiBase` (STRIPE_API_BASE) sends its requests to another host. */
export function createStripeGateway(opts: {
  secretKey: string;
  webhookSecret: string;
  apiBase?: string;
}): PaymentGateway {
  const base = opts.apiBase ? new URL(opts.apiBase) : undefined;
  const stripe = new Stripe(opts.secretKey, {
    maxNetworkRetries: 2,
    timeout: 20_000,
    ...(base
      ? {
          host: base.hostname,
          port: Number(base.port || (base.protocol === 'http:' ? 80 : 443)),
          protocol: base.protocol === 'http:' ? 'http' : 'https',
        }
      : {}),
  });
  return {
    async createCustomer(workspaceId, name) {
      const c = await stripe.customers.create(
        { name, metadata: { workspace_id: workspaceId } },
        { idempotencyKey: `customer-${workspaceId}` },
      );
      return c.id;
    },
    async charge(p) {
      try {
        const pi = await stripe.paymentIntents.create(
          {
            amount: p.amountCents,
            currency: 'usd',
            customer: p.customerId,
            payment_method: p.paymentMethodId,
            off_session: true,
            confirm: true,
            metadata: { invoice_id: p.invoiceId },
          },
          { idempotencyKey: `${p.invoiceId}-attempt-${p.attempt}` },
        );
        return outcomeOfPaymentIntent(pi);
      } catch (err) {
        // A decline is an answer, not a failure of the call: Stripe sends it as a card error with the PaymentIntent.
        if (err instanceof Stripe.errors.StripeCardError) {
          const code = err.code ?? null;
          return {
            paymentIntentId: err.payment_intent?.id ?? null,
            status: code === 'authentication_required' ? 'requires_action' : 'failed',
            declineCode: err.decline_code ?? code,
            message: err.message,
          };
        }
        throw err;
      }
    },
    async paymentIntent(id) {
      const pi = await stripe.paymentIntents.retrieve(id);
      return { ...outcomeOfPaymentIntent(pi), invoiceId: pi.metadata?.invoice_id ?? null };
    },
    async setupSession(p) {
      const s = await stripe.checkout.sessions.create({
        mode: 'setup',
        customer: p.customerId,
        currency: 'usd',
        success_url: p.successUrl,
        cancel_url: p.cancelUrl,
      });
      if (!s.url) throw new Error('Stripe answered a Checkout Session without a URL');
      return { id: s.id, url: s.url };
    },
    async setupSessionCard(sessionId) {
      const s = await stripe.checkout.sessions.retrieve(sessionId);
      if (s.status !== 'complete' || !s.setup_intent) return null;
      const si =
        typeof s.setup_intent === 'string' ? await stripe.setupIntents.retrieve(s.setup_intent) : s.setup_intent;
      const pmId = typeof si.payment_method === 'string' ? si.payment_method : si.payment_method?.id;
      if (!pmId) return null;
      const pm = await stripe.paymentMethods.retrieve(pmId);
      const customerId = typeof s.customer === 'string' ? s.customer : s.customer?.id;
      if (!pm.card || !customerId) return null;
      return {
        customerId,
        paymentMethodId: pm.id,
        brand: pm.card.brand,
        last4: pm.card.last4,
        expMonth: pm.card.exp_month,
        expYear: pm.card.exp_year,
      };
    },
    async refund(p) {
      const r = await stripe.refunds.create(
        { payment_intent: p.paymentIntentId, ...(p.amountCents === undefined ? {} : { amount: p.amountCents }) },
        { idempotencyKey: p.idempotencyKey },
      );
      return { id: r.id, amount: r.amount };
    },
    event(rawBody, signature, nowMs) {
      // receivedAt is in milliseconds: the injected clock decides what "5 minutes old" means.
      return stripe.webhooks.constructEvent(rawBody, signature, opts.webhookSecret, 300, undefined, nowMs);
    },
  };
}
