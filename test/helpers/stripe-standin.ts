import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';

/**
 * A stand-in for the parts of Stripe's API the service calls (docs/billing.md#payments-with-stripe), on loopback:
 * customers, Checkout Sessions in setup mode with a tiny hosted page, SetupIntents and PaymentMethods read back,
 * PaymentIntents charged off-session with test cards, refunds. Answers have Stripe's shapes (typed with the `stripe`
 * package's own types) and its error bodies; `Idempotency-Key` works like Stripe's (same key and body: the same
 * answer; same key, another body: 400 `idempotency_error`). Every object change makes an event, kept in `events`
 * and signed like Stripe's when a test sends it (`signed`): in order, out of order, twice, or never.
 */

/** Test card numbers: what a charge with each does. */
export const CARDS = {
  ok: '4242424242424242',
  declined: '4000000000000002',
  insufficientFunds: '4000000000009995',
  authentication: '4000002760003184',
} as const;

type Behaviour = 'ok' | 'declined' | 'insufficient_funds' | 'authentication';
const behaviourOf = (n: string): Behaviour =>
  n === CARDS.declined
    ? 'declined'
    : n === CARDS.insufficientFunds
      ? 'insufficient_funds'
      : n === CARDS.authentication
        ? 'authentication'
        : 'ok';

type Customer = Pick<Stripe.Customer, 'id' | 'object' | 'created' | 'livemode' | 'metadata' | 'name' | 'description'>;
type Session = Pick<
  Stripe.Checkout.Session,
  'id' | 'object' | 'mode' | 'status' | 'url' | 'success_url' | 'cancel_url' | 'created' | 'livemode' | 'currency'
> & { customer: string; setup_intent: string | null };
type SetupIntent = Pick<Stripe.SetupIntent, 'id' | 'object' | 'status' | 'usage' | 'created' | 'livemode'> & {
  customer: string;
  payment_method: string | null;
};
type PaymentMethod = Pick<Stripe.PaymentMethod, 'id' | 'object' | 'type' | 'created' | 'livemode'> & {
  customer: string;
  card: Pick<Stripe.PaymentMethod.Card, 'brand' | 'last4' | 'exp_month' | 'exp_year' | 'funding' | 'country'>;
};
type PaymentIntent = Pick<
  Stripe.PaymentIntent,
  'id' | 'object' | 'amount' | 'amount_received' | 'currency' | 'status' | 'metadata' | 'created' | 'livemode'
> & {
  customer: string;
  payment_method: string;
  last_payment_error: Pick<Stripe.PaymentIntent.LastPaymentError, 'type' | 'code' | 'decline_code' | 'message'> | null;
  /** Stripe sends it; the service must never keep or show it. */
  client_secret: string;
};
type Refund = Pick<Stripe.Refund, 'id' | 'object' | 'amount' | 'currency' | 'status' | 'created' | 'metadata'> & {
  payment_intent: string;
};
type Event = Pick<
  Stripe.Event,
  'id' | 'object' | 'api_version' | 'created' | 'livemode' | 'type' | 'pending_webhooks'
> & {
  data: { object: unknown };
};
type ErrorBody = {
  error: Pick<Stripe.StripeRawError, 'type' | 'code' | 'decline_code' | 'message' | 'param'> & {
    payment_intent?: PaymentIntent;
  };
};

/** Parses Stripe's form encoding (`metadata[workspace_id]=…`, `a[0]=…`) into nested objects. */
function parseForm(body: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of new URLSearchParams(body)) {
    const path = k.split(/\[|\]\[|\]/).filter((p) => p !== '');
    let at: Record<string, unknown> = out;
    path.forEach((p, i) => {
      if (i === path.length - 1) at[p] = v;
      else {
        if (at[p] === undefined) at[p] = {};
        at = at[p] as Record<string, unknown>;
      }
    });
  }
  return out;
}

export type StripeStandin = Awaited<ReturnType<typeof startStripeStandin>>;

/** Starts the stand-in; `secretKey` is the only key it accepts, `webhookSecret` signs its events. */
export async function startStripeStandin(opts: { secretKey: string; webhookSecret: string; now?: () => number }) {
  const now = () => Math.floor((opts.now?.() ?? Date.now()) / 1000);
  let seq = 0;
  const id = (prefix: string) => `${prefix}_standin${String(++seq).padStart(8, '0')}`;
  const customers = new Map<string, Customer>();
  const sessions = new Map<string, Session>();
  const setupIntents = new Map<string, SetupIntent>();
  const paymentMethods = new Map<string, PaymentMethod & { number: string }>();
  const paymentIntents = new Map<string, PaymentIntent>();
  const refunds = new Map<string, Refund>();
  const idempotency = new Map<string, { fingerprint: string; status: number; body: string }>();
  const events: Event[] = [];
  /** Every API request the service made (method, path, idempotency key, parsed body). */
  const requests: {
    method: string;
    path: string;
    idempotencyKey: string | undefined;
    body: Record<string, unknown>;
  }[] = [];
  /** What the next off-session charges answer instead of their card's behaviour (a test's `processing`). */
  const nextCharges: ('processing' | 'network_error')[] = [];

  const event = (type: string, object: unknown): Event => {
    const e: Event = {
      id: id('evt'),
      object: 'event',
      api_version: '2026-10-28.endive',
      created: now(),
      livemode: false,
      type: type as Stripe.Event['type'],
      pending_webhooks: 1,
      data: { object: structuredClone(object) },
    };
    events.push(e);
    return e;
  };
  const stripeError = (status: number, error: ErrorBody['error']) => ({ status, body: { error } as ErrorBody });
  const notFound = (what: string, key: string) =>
    stripeError(404, {
      type: 'invalid_request_error',
      code: 'resource_missing',
      message: `No such ${what}: '${key}'`,
      param: 'id',
    });

  function chargeFailure(pi: PaymentIntent, b: Exclude<Behaviour, 'ok'>) {
    const code = b === 'authentication' ? 'authentication_required' : 'card_declined';
    const decline =
      b === 'insufficient_funds' ? 'insufficient_funds' : b === 'declined' ? 'generic_decline' : undefined;
    const message =
      b === 'insufficient_funds'
        ? 'Your card has insufficient funds.'
        : b === 'authentication'
          ? 'Your card was declined. This transaction requires authentication.'
          : 'Your card was declined.';
    pi.status = b === 'authentication' ? 'requires_action' : 'requires_payment_method';
    pi.last_payment_error = { type: 'card_error', code, decline_code: decline, message };
    event('payment_intent.payment_failed', pi);
    return stripeError(402, { type: 'card_error', code, decline_code: decline, message, payment_intent: pi });
  }

  function post(path: string, p: Record<string, unknown>): { status: number; body: unknown } {
    const meta = (p.metadata ?? {}) as Record<string, string>;
    if (path === '/v1/customers') {
      const c: Customer = {
        id: id('cus'),
        object: 'customer',
        created: now(),
        livemode: false,
        metadata: meta,
        name: (p.name as string) ?? null,
        description: (p.description as string) ?? null,
      };
      customers.set(c.id, c);
      return { status: 200, body: c };
    }
    if (path === '/v1/checkout/sessions') {
      if (p.mode !== 'setup')
        return stripeError(400, { type: 'invalid_request_error', message: 'mode must be setup here', param: 'mode' });
      if (!customers.has(String(p.customer))) return notFound('customer', String(p.customer));
      const sid = id('cs_test');
      const s: Session = {
        id: sid,
        object: 'checkout.session',
        mode: 'setup',
        status: 'open',
        url: `${base}/pay/${sid}`,
        success_url: String(p.success_url),
        cancel_url: String(p.cancel_url),
        created: now(),
        livemode: false,
        currency: 'usd',
        customer: String(p.customer),
        setup_intent: null,
      };
      sessions.set(sid, s);
      return { status: 200, body: s };
    }
    if (path === '/v1/payment_intents') {
      const pm = paymentMethods.get(String(p.payment_method));
      if (!pm) return notFound('payment_method', String(p.payment_method));
      if (pm.customer !== p.customer) {
        return stripeError(400, {
          type: 'invalid_request_error',
          message: 'The provided PaymentMethod does not belong to the customer.',
          param: 'payment_method',
        });
      }
      const pi: PaymentIntent = {
        id: id('pi'),
        object: 'payment_intent',
        amount: Number(p.amount),
        amount_received: 0,
        currency: String(p.currency),
        status: 'requires_confirmation',
        metadata: meta,
        created: now(),
        livemode: false,
        customer: String(p.customer),
        payment_method: pm.id,
        last_payment_error: null,
        client_secret: `${'pi'}_secret_${seq}`,
      };
      paymentIntents.set(pi.id, pi);
      event('payment_intent.created', pi);
      const forced = nextCharges.shift();
      if (forced === 'processing') {
        pi.status = 'processing';
        return { status: 200, body: pi };
      }
      const b = behaviourOf(pm.number);
      if (b !== 'ok') return chargeFailure(pi, b);
      pi.status = 'succeeded';
      pi.amount_received = pi.amount;
      event('payment_intent.succeeded', pi);
      return { status: 200, body: pi };
    }
    if (path === '/v1/refunds') {
      const pi = paymentIntents.get(String(p.payment_intent));
      if (!pi) return notFound('payment_intent', String(p.payment_intent));
      const done = [...refunds.values()].filter((r) => r.payment_intent === pi.id).reduce((s, r) => s + r.amount, 0);
      const amount = p.amount === undefined ? pi.amount_received - done : Number(p.amount);
      if (pi.status !== 'succeeded' || amount <= 0 || amount + done > pi.amount_received) {
        return stripeError(400, {
          type: 'invalid_request_error',
          code: 'amount_too_large',
          message: `Refund amount ($${(amount / 100).toFixed(2)}) is greater than the unrefunded amount on the charge.`,
          param: 'amount',
        });
      }
      const r: Refund = {
        id: id('re'),
        object: 'refund',
        amount,
        currency: pi.currency,
        status: 'succeeded',
        created: now(),
        metadata: meta,
        payment_intent: pi.id,
      };
      refunds.set(r.id, r);
      event('charge.refunded', {
        id: id('ch'),
        object: 'charge',
        payment_intent: pi.id,
        amount_refunded: amount + done,
      });
      return { status: 200, body: r };
    }
    return stripeError(404, { type: 'invalid_request_error', message: `Unrecognized request URL (POST: ${path}).` });
  }

  function get(path: string): { status: number; body: unknown } {
    const [, , kind, k1, k2] = path.split('/');
    const key = kind === 'checkout' ? (k2 ?? '') : (k1 ?? '');
    const table: Record<string, [Map<string, unknown>, string]> = {
      customers: [customers, 'customer'],
      checkout: [sessions, 'checkout.session'],
      setup_intents: [setupIntents, 'setup_intent'],
      payment_methods: [paymentMethods, 'payment_method'],
      payment_intents: [paymentIntents, 'payment_intent'],
      refunds: [refunds, 'refund'],
    };
    const [map, what] = table[kind ?? ''] ?? [undefined, 'object'];
    const found = map?.get(key);
    if (!found) return notFound(what, key);
    if (kind === 'payment_methods') {
      const { number: _hidden, ...pm } = found as PaymentMethod & { number: string };
      return { status: 200, body: pm };
    }
    return { status: 200, body: found };
  }

  /** The hosted page: a card number field; submitting it completes the session and goes back to success_url. */
  function page(req: http.IncomingMessage, res: http.ServerResponse, body: string) {
    const sid = (req.url ?? '').split('/')[2]?.split('?')[0] ?? '';
    const s = sessions.get(sid);
    if (!s) {
      res.writeHead(404).end('no such session');
      return;
    }
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        `<!doctype html><title>Stand-in Checkout</title><form method="post"><label>Card number <input name="number" value="${CARDS.ok}"></label><button>Save card</button></form><a href="${s.cancel_url}">Cancel</a>`,
      );
      return;
    }
    const number = new URLSearchParams(body).get('number') ?? CARDS.ok;
    completeSession(sid, number);
    res.writeHead(303, { location: (s.success_url ?? '').replace('{CHECKOUT_SESSION_ID}', sid) }).end();
  }

  /** What submitting the hosted page does (a test may call it directly): the card saved, the session complete. */
  function completeSession(sid: string, number: string = CARDS.ok): Session {
    const s = sessions.get(sid);
    if (!s) throw new Error(`no session ${sid}`);
    const pm: PaymentMethod & { number: string } = {
      id: id('pm'),
      object: 'payment_method',
      type: 'card',
      created: now(),
      livemode: false,
      customer: s.customer,
      card: { brand: 'visa', last4: number.slice(-4), exp_month: 12, exp_year: 2034, funding: 'credit', country: 'US' },
      number,
    };
    paymentMethods.set(pm.id, pm);
    const si: SetupIntent = {
      id: id('seti'),
      object: 'setup_intent',
      status: 'succeeded',
      usage: 'off_session',
      created: now(),
      livemode: false,
      customer: s.customer,
      payment_method: pm.id,
    };
    setupIntents.set(si.id, si);
    s.status = 'complete';
    s.setup_intent = si.id;
    event('checkout.session.completed', s);
    return s;
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      if (path.startsWith('/pay/')) return page(req, res, body);
      const send = (a: { status: number; body: unknown }) => {
        res.writeHead(a.status, { 'content-type': 'application/json', 'request-id': id('req') });
        res.end(typeof a.body === 'string' ? a.body : JSON.stringify(a.body));
      };
      if (req.headers.authorization !== `Bearer ${opts.secretKey}`) {
        return send(
          stripeError(401, { type: 'invalid_request_error', message: 'Invalid API Key provided: (not shown)' }),
        );
      }
      const key = req.headers['idempotency-key'] as string | undefined;
      const params = parseForm(body);
      requests.push({ method: req.method ?? 'GET', path, idempotencyKey: key, body: params });
      if (req.method !== 'POST') return send(get(path));
      const fingerprint = createHash('sha256').update(`${path}\n${body}`).digest('hex');
      const kept = key === undefined ? undefined : idempotency.get(key);
      if (kept) {
        if (kept.fingerprint !== fingerprint) {
          return send(
            stripeError(400, {
              type: 'idempotency_error',
              message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
            }),
          );
        }
        res.writeHead(kept.status, { 'content-type': 'application/json', 'idempotent-replayed': 'true' });
        return res.end(kept.body);
      }
      if (nextCharges[0] === 'network_error' && path === '/v1/payment_intents') {
        // The charge is made, but the answer never reaches the caller (a worker killed mid-call looks the same).
        nextCharges.shift();
        const answer = post(path, params);
        if (key) idempotency.set(key, { fingerprint, status: answer.status, body: JSON.stringify(answer.body) });
        req.socket.destroy();
        return;
      }
      const answer = post(path, params);
      const text = JSON.stringify(answer.body);
      if (key && answer.status < 500) idempotency.set(key, { fingerprint, status: answer.status, body: text });
      send({ status: answer.status, body: text });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  const signer = new Stripe(opts.secretKey);

  return {
    base,
    customers,
    sessions,
    paymentIntents,
    paymentMethods,
    refunds,
    events,
    requests,
    nextCharges,
    completeSession,
    /** A card saved for a customer as if its Checkout page was submitted (a test's shortcut): the session and card. */
    addCard(customerId: string, number: string = CARDS.ok): { sessionId: string; paymentMethodId: string } {
      const sid = id('cs_test');
      sessions.set(sid, {
        id: sid,
        object: 'checkout.session',
        mode: 'setup',
        status: 'open',
        url: `${base}/pay/${sid}`,
        success_url: 'http://127.0.0.1/',
        cancel_url: 'http://127.0.0.1/',
        created: now(),
        livemode: false,
        currency: 'usd',
        customer: customerId,
        setup_intent: null,
      });
      const s = completeSession(sid, number);
      const pm = (setupIntents.get(s.setup_intent ?? '') as SetupIntent).payment_method as string;
      return { sessionId: sid, paymentMethodId: pm };
    },
    /** A PaymentIntent left `processing` finishes: succeeded or failed (with its event). */
    finish(piId: string, outcome: 'succeeded' | 'declined'): Event {
      const pi = paymentIntents.get(piId);
      if (!pi) throw new Error(`no payment intent ${piId}`);
      if (outcome === 'succeeded') {
        pi.status = 'succeeded';
        pi.amount_received = pi.amount;
        return event('payment_intent.succeeded', pi);
      }
      chargeFailure(pi, 'declined');
      return events.at(-1) as Event;
    },
    /** The events of a type, oldest first. */
    eventsOf: (type: string) => events.filter((e) => e.type === type),
    /** An event's body and `Stripe-Signature` as Stripe sends them (`timestamp` in seconds; `secret` to forge one). */
    signed(e: Event, o: { timestamp?: number; secret?: string } = {}) {
      const payload = JSON.stringify(e, null, 2);
      const header = signer.webhooks.generateTestHeaderString({
        payload,
        secret: o.secret ?? opts.webhookSecret,
        timestamp: o.timestamp ?? now(),
      });
      return { payload, header };
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
