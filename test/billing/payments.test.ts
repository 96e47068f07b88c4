// Backends: both — one Customer from concurrent creations, attempts committed before the call, on each database
// Tier: quick
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { openRedis, waitForRedis } from '../../src/db/redis.js';
import { systemActor } from '../../src/kernel/principal.js';
import { createStripeGateway, type PaymentGateway } from '../../src/modules/billing/stripe-gateway.js';
import { keyChangeAnnouncer } from '../../src/modules/keys/keys-epoch.js';
import {
  asCli,
  json,
  newWorkspace,
  otherProcess,
  startTestApp,
  type TestApp,
  type TestWorkspace,
} from '../helpers/app.js';
import { ORIGIN, signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { CARDS, type StripeStandin, startStripeStandin } from '../helpers/stripe-standin.js';

// Payments with Stripe (docs/billing.md#payments-with-stripe) against the stand-in on loopback: the settings, the
// Customer created once, and the worker's charge of finalized invoices (one PaymentIntent per attempt, its key
// recorded before the call). Time is the injected clock.
const SECRET = 'sk_test_standin0123456789';
const WHSEC = 'whsec_standin0123456789';
const T = (iso: string) => Date.parse(iso);
let now = T('2028-03-10T12:00:00.000Z');
const clock = { now: () => now };
let stripe: StripeStandin;
let t: TestApp;
/** When set, the gateway's next charge reaches Stripe and then fails as if the worker stopped before its commit. */
let dieAfterCharge = false;

beforeAll(async () => {
  stripe = await startStripeStandin({ secretKey: SECRET, webhookSecret: WHSEC, now: clock.now });
  const real = createStripeGateway({ secretKey: SECRET, webhookSecret: WHSEC, apiBase: stripe.base });
  const gateway: PaymentGateway = {
    ...real,
    async charge(p) {
      const out = await real.charge(p);
      if (dieAfterCharge) {
        dieAfterCharge = false;
        throw new Error('worker stopped between the call and the commit');
      }
      return out;
    },
  };
  t = await startTestApp({
    clock,
    config: {
      STRIPE_SECRET_KEY: SECRET,
      STRIPE_WEBHOOK_SECRET: WHSEC,
      STRIPE_API_BASE: stripe.base,
      PUBLIC_URL: ORIGIN,
    },
    paymentGateway: gateway,
  });
});
afterAll(async () => {
  await t?.close();
  await stripe?.close();
});

const job = (id: string) => t.services.uow.as(systemActor(`scheduler:${id}`));
const cli = () => t.services.uow.as(systemActor('cli'));

/** A workspace on pro since mid-period whose first invoice (a proration above 0) is finalized; its card saved. */
async function invoicedWorkspace(card: string | null): Promise<{ ws: TestWorkspace; invoiceId: string }> {
  now = T('2028-03-10T12:00:00.000Z');
  const ws = await newWorkspace(t);
  if (card !== null) {
    const customer = (await t.services.billing.ensureCustomer(cli(), ws.id)) as string;
    const { sessionId } = stripe.addCard(customer, card);
    expect(await t.services.billing.saveCard(cli(), ws.id, sessionId)).toBe(true);
  }
  // Without a card only the operator's override moves a workspace to a paid plan (docs/billing.md#payments-with-stripe).
  await t.services.billing.setPlan(cli(), ws.id, 'pro', { withoutCard: card === null });
  now = T('2028-04-10T01:00:00.000Z');
  await t.services.billing.finalizeDue(job('billing-invoices'));
  const page = await t.services.billing.invoicesOf(ws.id, { limit: 10, offset: 0, afterId: null });
  const inv = page.items[0];
  if (!inv) throw new Error('no invoice');
  expect(inv.total_cents).toBeGreaterThan(0);
  return { ws, invoiceId: inv.id };
}

async function invoiceOver(ws: TestWorkspace) {
  const res = await t.request({ method: 'GET', url: '/v1/billing/invoices', key: ws.test });
  expect(res.statusCode).toBe(200);
  return (json(res) as { data: Record<string, unknown>[] }).data[0] as Record<string, unknown>;
}

describe('settings', () => {
  it('half a Stripe configuration stops start-up naming the missing setting', () => {
    expect(() => loadConfig({}, { STRIPE_SECRET_KEY: SECRET })).toThrow(ConfigError);
    expect(() => loadConfig({}, { STRIPE_SECRET_KEY: SECRET })).toThrow(/STRIPE_WEBHOOK_SECRET is required/);
    expect(() => loadConfig({}, { STRIPE_WEBHOOK_SECRET: WHSEC })).toThrow(/STRIPE_SECRET_KEY is required/);
    // A bad key is refused without showing it.
    const err = (() => {
      try {
        loadConfig({}, { STRIPE_SECRET_KEY: 'pk_live_oops', STRIPE_WEBHOOK_SECRET: WHSEC });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(err?.message).toMatch(/STRIPE_SECRET_KEY must be/);
    expect(err?.message).not.toContain('pk_live_oops');
    expect(loadConfig({}, {}).STRIPE_SECRET_KEY).toBeUndefined();
  });
});

describe('the Customer', () => {
  it('is created once per workspace, even by two creations at once', async () => {
    const ws = await newWorkspace(t);
    const before = stripe.customers.size;
    const [a, b] = await Promise.all([
      t.services.billing.ensureCustomer(cli(), ws.id),
      t.services.billing.ensureCustomer(cli(), ws.id),
    ]);
    expect(a).toBe(b);
    expect(stripe.customers.size).toBe(before + 1);
    expect(stripe.customers.get(a as string)?.metadata).toEqual({ workspace_id: ws.id });
    const calls = stripe.requests.filter(
      (r) => r.path === '/v1/customers' && (r.body.metadata as Record<string, string>).workspace_id === ws.id,
    );
    expect(calls.length).toBeGreaterThanOrEqual(1);
    for (const c of calls) expect(c.idempotencyKey).toBe(`customer-${ws.id}`);
    expect(await t.services.billing.ensureCustomer(cli(), ws.id)).toBe(a);
  });
});

describe('charging finalized invoices', () => {
  it('charges an invoice above 0 off-session with its attempt key: paid, attempts and paid_at shown', async () => {
    const { ws, invoiceId } = await invoicedWorkspace(CARDS.ok);
    expect((await invoiceOver(ws)).payment_status).toBe('none');
    expect(await t.services.billing.chargeDue(job('billing-payments'))).toBeGreaterThanOrEqual(1);
    const call = stripe.requests.find(
      (r) => r.path === '/v1/payment_intents' && r.idempotencyKey === `${invoiceId}-attempt-1`,
    );
    expect(call?.body).toMatchObject({
      currency: 'usd',
      off_session: 'true',
      confirm: 'true',
      metadata: { invoice_id: invoiceId },
    });
    const inv = await invoiceOver(ws);
    expect(inv).toMatchObject({
      status: 'paid',
      payment_status: 'succeeded',
      paid_at: '2028-04-10T01:00:00.000Z',
      refunded_cents: 0,
      payment_attempts: [{ attempt: 1, outcome: 'succeeded', decline_code: null, message: null }],
    });
    expect(Number(call?.body.amount)).toBe(inv.total_cents);
    // Nothing more to charge.
    expect(await t.services.billing.chargeDue(job('billing-payments'), ws.id)).toBe(0);
    const audit = await t.request({ method: 'GET', url: '/v1/audit-log?action=invoice.', key: ws.live });
    expect(audit.statusCode).toBe(200);
    const entries = (json(audit) as { data: { action: string; target: { id: string } }[] }).data;
    expect(entries.filter((e) => e.target.id === invoiceId).map((e) => e.action)).toEqual([
      'invoice.payment_succeeded',
      'invoice.finalized',
    ]);
    expect(audit.body).not.toContain(SECRET);
    // The catalogue event the outbox already maps from a settled invoice.
    const events = await t.request({ method: 'GET', url: '/v1/events?event=invoice.payment_succeeded', key: ws.live });
    expect(events.body).toContain(invoiceId);
  });

  it('a decline is recorded with its code and message, and the first retry is due a day later', async () => {
    const { ws } = await invoicedWorkspace(CARDS.insufficientFunds);
    await t.services.billing.chargeDue(job('billing-payments'));
    const inv = await invoiceOver(ws);
    expect(inv).toMatchObject({
      status: 'open',
      payment_status: 'failed',
      paid_at: null,
      next_payment_attempt_at: '2028-04-11T01:00:00.000Z',
      payment_attempts: [
        {
          attempt: 1,
          outcome: 'failed',
          decline_code: 'insufficient_funds',
          message: 'Your card has insufficient funds.',
        },
      ],
    });
    // Not before the retry is due.
    expect(await t.services.billing.chargeDue(job('billing-payments'))).toBe(0);
  });

  it('a workspace without a card is not charged and keeps working', async () => {
    const { ws } = await invoicedWorkspace(null);
    await t.services.billing.chargeDue(job('billing-payments'));
    expect(await invoiceOver(ws)).toMatchObject({ status: 'open', payment_status: 'none', payment_attempts: [] });
  });

  it('a worker stopped between the call and its commit sends the same attempt again: one charge', async () => {
    const { ws, invoiceId } = await invoicedWorkspace(CARDS.ok);
    dieAfterCharge = true;
    await expect(t.services.billing.chargeDue(job('billing-payments'))).rejects.toThrow(/worker stopped/);
    expect(await invoiceOver(ws)).toMatchObject({
      payment_status: 'processing',
      payment_attempts: [{ attempt: 1, outcome: 'pending' }],
    });
    await t.services.billing.chargeDue(job('billing-payments'));
    expect(await invoiceOver(ws)).toMatchObject({
      status: 'paid',
      payment_attempts: [{ attempt: 1, outcome: 'succeeded' }],
    });
    const charges = [...stripe.paymentIntents.values()].filter((p) => p.metadata?.invoice_id === invoiceId);
    expect(charges).toHaveLength(1);
    const keys = stripe.requests.filter(
      (r) => r.path === '/v1/payment_intents' && r.idempotencyKey?.startsWith(invoiceId),
    );
    expect(keys.map((r) => r.idempotencyKey)).toEqual([`${invoiceId}-attempt-1`, `${invoiceId}-attempt-1`]);
  });
});

describe('the Stripe webhook', () => {
  type Ev = StripeStandin['events'][number];
  const send = (e: Ev, o: { timestamp?: number; secret?: string; header?: string | null } = {}) => {
    const { payload, header } = stripe.signed(e, o);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (o.header !== null) headers['stripe-signature'] = o.header ?? header;
    return t.request({ method: 'POST', url: '/stripe/webhook', body: payload, headers });
  };
  /** A workspace whose invoice's charge Stripe left processing (its events not sent). */
  async function processing() {
    const w = await invoicedWorkspace(CARDS.ok);
    stripe.nextCharges.push('processing');
    await t.services.billing.chargeDue(job('billing-payments'), w.ws.id);
    const pi = [...stripe.paymentIntents.values()].find((p) => p.metadata?.invoice_id === w.invoiceId);
    if (!pi) throw new Error('no payment intent');
    expect(await invoiceOver(w.ws)).toMatchObject({
      status: 'open',
      payment_status: 'processing',
      payment_attempts: [{ attempt: 1, outcome: 'processing' }],
    });
    return { ...w, piId: pi.id };
  }
  const auditOf = async (ws: TestWorkspace) =>
    (
      json(await t.request({ method: 'GET', url: '/v1/audit-log?action=invoice.', key: ws.live })) as {
        data: { action: string }[];
      }
    ).data.map((e) => e.action);

  it('refuses a forged, stale or missing signature with 400, changing nothing', async () => {
    const { ws, piId } = await processing();
    const ok = stripe.finish(piId, 'succeeded');
    const before = await invoiceOver(ws);
    for (const res of [
      await send(ok, { secret: 'whsec_forged0000000000' }),
      await send(ok, { timestamp: Math.floor(now / 1000) - 301 }),
      await send(ok, { header: null }),
      await send(ok, { header: 't=1,v1=00' }),
    ]) {
      expect(res.statusCode).toBe(400);
      expect(json(res).error.code).toBe('invalid_signature');
      expect(res.body).not.toContain(WHSEC);
    }
    expect(await invoiceOver(ws)).toEqual(before);
    // Within the tolerance it is taken.
    expect((await send(ok, { timestamp: Math.floor(now / 1000) - 299 })).statusCode).toBe(200);
    expect(await invoiceOver(ws)).toMatchObject({ status: 'paid', payment_status: 'succeeded' });
  });

  it('processes an event once, and a late failure never undoes a success', async () => {
    const { ws, piId } = await processing();
    const ok = stripe.finish(piId, 'succeeded');
    const late: Ev = {
      ...structuredClone(ok),
      id: `${ok.id}_late`,
      type: 'payment_intent.payment_failed',
      data: {
        object: {
          ...(ok.data.object as object),
          status: 'requires_payment_method',
          last_payment_error: { type: 'card_error', code: 'card_declined', message: 'Your card was declined.' },
        },
      },
    };
    expect((await send(ok)).statusCode).toBe(200);
    expect((await send(ok)).statusCode).toBe(200);
    expect((await send(late)).statusCode).toBe(200);
    const inv = await invoiceOver(ws);
    expect(inv).toMatchObject({
      status: 'paid',
      payment_status: 'succeeded',
      payment_attempts: [{ attempt: 1, outcome: 'succeeded', decline_code: null }],
    });
    expect((await auditOf(ws)).filter((a) => a === 'invoice.payment_succeeded')).toHaveLength(1);
    expect(await auditOf(ws)).not.toContain('invoice.payment_failed');
  });

  it("answers 2xx to types it ignores and to another workspace's or an unknown invoice, changing nothing", async () => {
    const { ws, piId, invoiceId } = await processing();
    const other = await processing();
    const before = await invoiceOver(ws);
    const ok = stripe.finish(piId, 'succeeded');
    // The event names the other workspace's invoice: it is not this PaymentIntent's, nothing moves.
    const crossed: Ev = structuredClone(ok);
    crossed.id = `${ok.id}_crossed`;
    (crossed.data.object as { metadata: Record<string, string> }).metadata = { invoice_id: other.invoiceId };
    const unknown: Ev = structuredClone(ok);
    unknown.id = `${ok.id}_unknown`;
    (unknown.data.object as { id: string }).id = 'pi_unknown000';
    const ignored: Ev = { ...structuredClone(ok), id: `${ok.id}_ignored`, type: 'customer.created' as Ev['type'] };
    for (const e of [crossed, unknown, ignored]) expect((await send(e)).statusCode).toBe(200);
    expect(await invoiceOver(ws)).toEqual(before);
    expect(await invoiceOver(other.ws)).toMatchObject({ payment_status: 'processing' });
    expect(invoiceId).not.toBe(other.invoiceId);
  });

  it('settles a payment whose event never arrives, 15 minutes after its attempt', async () => {
    const { ws, piId } = await processing();
    stripe.finish(piId, 'succeeded');
    now += 14 * 60_000;
    expect(await t.services.billing.settleProcessing(job('billing-settle-payments'))).toBe(0);
    expect((await invoiceOver(ws)).payment_status).toBe('processing');
    now += 60_000;
    expect(await t.services.billing.settleProcessing(job('billing-settle-payments'))).toBeGreaterThanOrEqual(1);
    expect(await invoiceOver(ws)).toMatchObject({ status: 'paid', payment_status: 'succeeded' });
  });
});

describe('dunning', () => {
  it('retries 1, 3, 5 and 7 days after the first failure, telling the admins each time; then 402 for live keys until a new card pays', async () => {
    const { ws, invoiceId } = await invoicedWorkspace(CARDS.declined);
    const first = now;
    const day = 86_400_000;
    const live = () => t.request({ method: 'GET', url: '/v1/resources', key: ws.live });
    expect((await live()).statusCode).toBe(200);
    await t.services.billing.chargeDue(job('billing-payments'));
    const attempts = async () => ((await invoiceOver(ws)).payment_attempts as unknown[]).length;
    for (const [i, d] of [1, 3, 5, 7].entries()) {
      expect((await invoiceOver(ws)).next_payment_attempt_at).toBe(new Date(first + d * day).toISOString());
      now = first + d * day - 1;
      await t.services.billing.chargeDue(job('billing-payments'));
      expect(await attempts()).toBe(i + 1);
      now = first + d * day;
      // Answered, and this process's read of the workspace fresh, right before the last charge.
      if (d === 7) expect((await live()).statusCode).toBe(200);
      await t.services.billing.chargeDue(job('billing-payments'));
      expect(await attempts()).toBe(i + 2);
    }
    const inv = await invoiceOver(ws);
    expect(inv).toMatchObject({ status: 'uncollectible', payment_status: 'failed', next_payment_attempt_at: null });
    expect((inv.payment_attempts as unknown[]).length).toBe(5);
    const notices = await t.storage.db
      .selectFrom('notifications')
      .select(['type', 'data', 'user_id'])
      .where('workspace_id', '=', ws.id)
      .where('type', '=', 'invoice.payment_failed')
      .execute();
    expect(notices).toHaveLength(5);
    expect(notices.every((n) => n.user_id === ws.adminId)).toBe(true);
    // At once, with no clock moved: the change re-verifies every cached key, which carries the unpaid state.
    const refused = await live();
    expect(refused.statusCode).toBe(402);
    expect(json(refused).error.code).toBe('payment_required');
    expect(json(refused).error.message).toContain(`${ORIGIN}/console/w/${ws.id}/live/settings/billing`);
    expect((await t.request({ method: 'GET', url: '/v1/resources', key: ws.test })).statusCode).toBe(200);
    const audit = (
      json(await t.request({ method: 'GET', url: '/v1/audit-log?action=subscription.', key: ws.test })) as {
        data: { action: string }[];
      }
    ).data.map((e) => e.action);
    expect(audit).toEqual(['subscription.unpaid']);
    const events = await t.request({ method: 'GET', url: '/v1/events?event=invoice.payment_failed', key: ws.test });
    expect(events.statusCode).toBe(200);

    // A new card retries at once; paying ends the 402s.
    const customer = (await t.services.billing.ensureCustomer(cli(), ws.id)) as string;
    const { sessionId } = stripe.addCard(customer, CARDS.ok);
    expect(await t.services.billing.saveCard(cli(), ws.id, sessionId)).toBe(true);
    expect(await invoiceOver(ws)).toMatchObject({ status: 'paid', payment_status: 'succeeded' });
    expect([...stripe.paymentIntents.values()].filter((p) => p.metadata?.invoice_id === invoiceId)).toHaveLength(6);
    expect((await live()).statusCode).toBe(200);
    const after = (
      json(await t.request({ method: 'GET', url: '/v1/audit-log?action=subscription.', key: ws.live })) as {
        data: { action: string }[];
      }
    ).data.map((e) => e.action);
    expect(after).toEqual(['subscription.reactivated', 'subscription.unpaid']);
  });
});

describe('the 402 on every process', () => {
  it("another process's mark-paid of the uncollectible invoice ends this process's 402s on the next request", async () => {
    const { ws, invoiceId } = await invoicedWorkspace(CARDS.declined);
    const live = () => t.request({ method: 'GET', url: '/v1/resources', key: ws.live });
    const first = now;
    await t.services.billing.chargeDue(job('billing-payments'));
    for (const d of [1, 3, 5, 7]) {
      now = first + d * 86_400_000;
      await t.services.billing.chargeDue(job('billing-payments'));
    }
    expect((await live()).statusCode).toBe(402);
    // `wsvc billing mark-paid` from another connection (with Redis, its key changes announced there, as the CLI's are).
    const { storage, services } = otherProcess(t);
    let redis: Redis | undefined;
    if (t.redis && !storage.dialect.keysEpoch && process.env.TEST_REDIS_URL) {
      redis = openRedis(process.env.TEST_REDIS_URL);
      await waitForRedis(redis, 5000);
      storage.dialect.keyChanges = keyChangeAnnouncer(redis, t.config.REDIS_KEY_PREFIX);
    }
    try {
      await services.billing.settle(asCli(services), invoiceId, 'paid');
    } finally {
      redis?.disconnect();
      await storage.close();
    }
    expect((await live()).statusCode).toBe(200);
  });
});

describe('a paid plan needs a card', () => {
  it("the operator's set-plan is refused the same way unless it passes the override; /v1 changes no plan", async () => {
    now = T('2028-03-10T12:00:00.000Z');
    const ws = await newWorkspace(t);
    const err = await t.services.billing.setPlan(cli(), ws.id, 'scale').catch((e: unknown) => e);
    expect(err).toMatchObject({ statusCode: 409, code: 'payment_method_required' });
    const plan = async () => json(await t.request({ method: 'GET', url: '/v1/billing/subscription', key: ws.test }));
    expect((await plan()).data.plan.id).toBe('free');
    expect(
      await t.storage.db.selectFrom('subscription_changes').selectAll().where('workspace_id', '=', ws.id).execute(),
    ).toEqual([]);
    // The /v1 billing routes only read: a write there is 405, whatever the key.
    for (const url of ['/v1/billing/subscription', '/v1/billing/invoices']) {
      const res = await t.request({ method: 'POST', url, key: ws.live, body: { plan: 'pro' } });
      expect(res.statusCode).toBe(405);
    }
    expect(await t.services.billing.setPlan(cli(), ws.id, 'scale', { withoutCard: true })).toMatchObject({
      change: 'upgraded',
      from: 'free',
      to: 'scale',
    });
    // On a paid plan, a move to another paid plan or back to free needs nothing more.
    expect(await t.services.billing.setPlan(cli(), ws.id, 'free')).toMatchObject({ change: 'downgrade_scheduled' });
  });

  it("refuses an admin's move from free to a paid plan without a card (409, nothing changed), and allows it with one", async () => {
    now = T('2028-03-10T12:00:00.000Z');
    const ws = await newWorkspace(t);
    const email = (await t.services.users.row(t.storage.db, ws.adminId))?.email ?? '';
    const link = await t.services.consoleAuth.makeLink(cli(), 'set_password', email, {});
    const admin = await signInWithLink(t, link.url);
    const change = () =>
      admin.call({ method: 'POST', url: '/console/api/billing/plan', ws: ws.id, body: { plan: 'pro' } });
    const err = expectError(await change(), 409, 'payment_method_required');
    expect(err.message).toBe(
      "Add a card on the billing page before moving to Pro: a paid plan is charged to the workspace's card.",
    );
    const sub = await t.request({ method: 'GET', url: '/v1/billing/subscription', key: ws.test });
    expect(json(sub).data.plan.id).toBe('free');
    const customer = (await t.services.billing.ensureCustomer(cli(), ws.id)) as string;
    const { sessionId } = stripe.addCard(customer, CARDS.ok);
    expect(await t.services.billing.saveCard(cli(), ws.id, sessionId)).toBe(true);
    const ok = await change();
    expect(ok.statusCode, ok.body).toBe(200);
    expect(json(ok).data).toMatchObject({ change: 'upgraded', from: 'free', to: 'pro' });
  });
});

describe('adding a card through Checkout in setup mode', () => {
  it('an admin gets the hosted page, submits it, and the return stores only the card shown; a member gets 403', async () => {
    const ws = await newWorkspace(t);
    const signIn = async (userId: string) => {
      const email = (await t.services.users.row(t.storage.db, userId))?.email ?? '';
      return signInWithLink(t, (await t.services.consoleAuth.makeLink(cli(), 'set_password', email, {})).url);
    };
    const admin = await signIn(ws.adminId);
    const member = await signIn((await ws.member('member')).userId);
    expectError(
      await member.call({ method: 'POST', url: '/console/api/billing/card/checkout', ws: ws.id }),
      403,
      'insufficient_scope',
    );
    const started = await admin.call({ method: 'POST', url: '/console/api/billing/card/checkout', ws: ws.id });
    expect(started.statusCode, started.body).toBe(200);
    const url = json(started).data.url as string;
    expect(url.startsWith(stripe.base)).toBe(true);
    expect((await fetch(url)).status).toBe(200);
    const submitted = await fetch(url, {
      method: 'POST',
      body: new URLSearchParams({ number: CARDS.ok }),
      redirect: 'manual',
    });
    expect(submitted.status).toBe(303);
    const back = submitted.headers.get('location') ?? '';
    expect(back.startsWith(`${ORIGIN}/console/api/billing/card/return?ws=${ws.id}&session_id=cs_`)).toBe(true);
    // The browser comes back by a plain navigation: no X-Workspace-Id header, the workspace in the query. Another
    // workspace's id there is refused (not a member), nothing stored.
    const other = await newWorkspace(t);
    const crossed = await admin.call({ method: 'GET', url: back.slice(ORIGIN.length).replace(ws.id, other.id) });
    expect(crossed.statusCode).toBeGreaterThanOrEqual(400);
    expect(json(await admin.call({ method: 'GET', url: '/console/api/billing/card', ws: ws.id })).data.card).toBeNull();
    const returned = await admin.call({ method: 'GET', url: back.slice(ORIGIN.length) });
    expect(returned.statusCode, returned.body).toBe(303);
    expect(returned.headers.location).toBe(`${ORIGIN}/console/w/${ws.id}/live/settings/billing?card=saved`);
    const card = await admin.call({ method: 'GET', url: '/console/api/billing/card', ws: ws.id });
    expect(json(card).data).toEqual({
      enabled: true,
      card: { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2034 },
    });
    const audit = await t.request({ method: 'GET', url: '/v1/audit-log?action=payment_method.updated', key: ws.test });
    expect(audit.body).toContain('visa •••• 4242 12/2034');
    expect(audit.body).not.toContain(CARDS.ok);
  });
});

describe('refunds', () => {
  it('refunds part, then the rest, of a card payment; refunded_cents shows it; more is refused', async () => {
    const { ws, invoiceId } = await invoicedWorkspace(CARDS.ok);
    await t.services.billing.chargeDue(job('billing-payments'), ws.id);
    const total = (await invoiceOver(ws)).total_cents as number;
    expect(await t.services.billing.refund(cli(), invoiceId, 100)).toBe(100);
    expect((await invoiceOver(ws)).refunded_cents).toBe(100);
    expect(await t.services.billing.refund(cli(), invoiceId)).toBe(total - 100);
    expect((await invoiceOver(ws)).refunded_cents).toBe(total);
    await expect(t.services.billing.refund(cli(), invoiceId, 1)).rejects.toMatchObject({
      statusCode: 400,
      details: [{ message: expect.stringMatching(/^Invoice INV-1 is already refunded in full \(\d+ cents\)/) }],
    });
    expect([...stripe.refunds.values()].reduce((n, r) => n + r.amount, 0)).toBeGreaterThanOrEqual(total);
  });
});
