import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { periodAt, proration } from '../../src/modules/billing/periods.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { ORIGIN } from '../helpers/console.js';
import { openTestStorage } from '../helpers/storage.js';
import { CARDS, type StripeStandin, startStripeStandin } from '../helpers/stripe-standin.js';

// Backends: both — `wsvc billing` in a child process reads and writes the suite's database
// Tier: full — 22 `wsvc` child processes, over a second of CPU each to start
// `wsvc billing plans|show|set-plan|invoices|mark-paid|void|refund` as a user runs them: the real command in a
// child process (the system clock), on the suite's database; the test app finalizes invoices later on its own clock.
// With payments on, the children and a second app on the same database call the Stripe stand-in on loopback.
const exec = promisify(execFile);
let t: TestApp;
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let databaseUrl: string;
let now = Date.now();
beforeAll(async () => {
  storage = await openTestStorage();
  t = await startTestApp({ storage, clock: { now: () => now }, resolveHost: async () => ['93.184.216.34'] });
  const schema = storage.schema;
  databaseUrl = schema ? `${storage.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}` : storage.url;
});
afterAll(async () => {
  await t.close();
  await storage.close();
});

async function wsvc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return wsvcWith({}, ...args);
}

async function wsvcWith(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec(process.execPath, ['bin/wsvc.js', ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', PLANS_FILE: '', ...env },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
}

describe('wsvc billing (docs/billing.md#the-cli)', { timeout: 180_000 }, () => {
  it('lists the default plans, shows a subscription, upgrades with proration, refuses a downgrade naming the limit', async () => {
    const plans = await wsvc('billing', 'plans', '--json');
    expect(plans.code, plans.stderr).toBe(0);
    expect(
      JSON.parse(plans.stdout).plans.map((p: Record<string, unknown>) => [
        p.id,
        p.base_price_cents,
        p.included_requests,
        p.hard_cap,
        p.max_resources,
        p.max_webhooks,
      ]),
    ).toEqual([
      ['free', 0, 10_000, true, 100, 2],
      ['pro', 4_900, 1_000_000, false, 100_000, 16],
      ['scale', 49_900, 20_000_000, false, null, 16],
    ]);
    const plansText = await wsvc('billing', 'plans');
    expect(plansText.stdout).toMatch(/^pro\s+Pro\s+\$49\.00\s+1,000,000\s+\$0\.50 per 10,000\s+100,000\s+16$/m);

    now = Date.now();
    const ws = await newWorkspace(t, 'Billing CLI');
    const shown = await wsvc('billing', 'show', '--workspace', ws.id, '--json');
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).subscription).toMatchObject({ workspace_id: ws.id, plan: { id: 'free' } });

    const before = Date.now();
    const up = await wsvc('billing', 'set-plan', '--workspace', ws.id, '--plan', 'pro', '--json');
    const after = Date.now();
    expect(up.code, up.stderr).toBe(0);
    const result = JSON.parse(up.stdout).result;
    expect(result).toMatchObject({ change: 'upgraded', from: 'free', to: 'pro' });
    // The CLI ran at some instant between before and after: its proration lies between theirs.
    const period = periodAt(now, before);
    expect(result.proration_cents).toBeLessThanOrEqual(proration(period, before, 0, 4_900).amountCents);
    expect(result.proration_cents).toBeGreaterThanOrEqual(proration(period, after, 0, 4_900).amountCents);

    // Three live webhooks: free allows two, so the downgrade is refused, naming them; test ones do not count.
    const hook = (key: string) =>
      t.request({ method: 'POST', url: '/v1/webhooks', key, body: { url: 'https://example.com/hook', events: ['*'] } });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await hook(ws.live);
      expect(res.statusCode, res.body).toBe(201);
      ids.push(json(res).data.id);
    }
    const refused = await wsvc('billing', 'set-plan', '--workspace', ws.id, '--plan', 'free');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'error: downgrade_blocked: Cannot move to Free: webhooks: 3 in the live environment, Free allows 2. Delete the excess first.\n',
    );
    const unknown = await wsvc('billing', 'set-plan', '--workspace', ws.id, '--plan', 'gold');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('error: validation_error: plan must be one of free, pro, scale.\n');
    expect((await t.request({ method: 'DELETE', url: `/v1/webhooks/${ids[0]}`, key: ws.live })).statusCode).toBe(204);
    const down = await wsvc('billing', 'set-plan', '--workspace', ws.id, '--plan', 'free');
    expect(down.code, down.stderr).toBe(0);
    expect(down.stdout).toBe(`pro → free at the end of the period, ${new Date(period.end).toISOString()}\n`);
    const showText = await wsvc('billing', 'show', '--workspace', ws.id);
    expect(showText.stdout).toContain(`pending   free from ${new Date(period.end).toISOString()}`);
    expect(showText.stdout).toMatch(/^proration\s+1\s+\$\d+\.\d\d\s+\$\d+\.\d\d\s+Upgrade Free to Pro at /m);

    // Invoices, finalized by the job on the app's clock two periods on; marked paid once, never twice.
    expect((await wsvc('billing', 'invoices', '--workspace', ws.id)).stdout).toBe('(no invoices)\n');
    now = periodAt(now, period.end).end + 3_600_000;
    expect(await t.services.billing.finalizeDue(t.services.uow.as(systemActor('scheduler:billing-invoices')))).toBe(2);
    const list = await wsvc('billing', 'invoices', '--workspace', ws.id, '--json');
    const invoices = JSON.parse(list.stdout).invoices;
    expect(invoices.map((i: { number: string; plan: string; status: string }) => [i.number, i.plan, i.status])).toEqual(
      [
        ['INV-2', 'free', 'open'],
        ['INV-1', 'pro', 'open'],
      ],
    );
    expect(invoices[1].total_cents).toBe(result.proration_cents);
    const paid = await wsvc('billing', 'mark-paid', invoices[1].id);
    expect(paid.code, paid.stderr).toBe(0);
    expect(paid.stdout.split('\n')[0]).toBe(`INV-1 paid ($${(result.proration_cents / 100).toFixed(2)})`);
    const again = await wsvc('billing', 'void', invoices[1].id);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      'error: invoice_not_open: Invoice INV-1 is paid; only an open invoice can be marked void.\n',
    );
    const missing = await wsvc('billing', 'mark-paid', 'inv_nope');
    expect(missing.stderr).toBe('error: not_found: No such invoice.\n');
    const voided = await wsvc('billing', 'void', invoices[0].id, '--json');
    expect(JSON.parse(voided.stdout).invoice).toMatchObject({ number: 'INV-2', status: 'void' });
  });
});

describe('wsvc billing with payments through Stripe (docs/billing.md#payments-with-stripe)', {
  timeout: 180_000,
}, () => {
  const SECRET = 'sk_test_standin0123456789';
  const WHSEC = 'whsec_standin0123456789';
  let stripe: StripeStandin;
  let p: TestApp;
  let pnow = Date.now();
  let env: Record<string, string>;
  const cli = () => p.services.uow.as(systemActor('cli'));
  const invoiceOf = async (ws: { test: string }) =>
    (
      json(await p.request({ method: 'GET', url: '/v1/billing/invoices', key: ws.test })).data as Record<
        string,
        unknown
      >[]
    )[0];
  /** A card saved for the workspace as its Checkout page would (the stand-in's shortcut). */
  async function addCard(wsId: string) {
    const customer = (await p.services.billing.ensureCustomer(cli(), wsId)) as string;
    expect(await p.services.billing.saveCard(cli(), wsId, stripe.addCard(customer, CARDS.ok).sessionId)).toBe(true);
  }

  beforeAll(async () => {
    stripe = await startStripeStandin({ secretKey: SECRET, webhookSecret: WHSEC, now: () => pnow });
    const stripeEnv = { STRIPE_SECRET_KEY: SECRET, STRIPE_WEBHOOK_SECRET: WHSEC, STRIPE_API_BASE: stripe.base };
    env = { ...stripeEnv, PUBLIC_URL: ORIGIN };
    p = await startTestApp({ storage, clock: { now: () => pnow }, config: { ...stripeEnv, PUBLIC_URL: ORIGIN } });
  });
  afterAll(async () => {
    await p?.close();
    await stripe?.close();
  });

  it('set-plan from free to a paid plan is refused without a card, saying how to fix it; --without-card and a card let it through', async () => {
    pnow = Date.now();
    const ws = await newWorkspace(p, 'No card');
    const refused = await wsvcWith(env, 'billing', 'set-plan', '--workspace', ws.id, '--plan', 'pro');
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(
      `error: payment_method_required: Workspace ${ws.id} has no card, and Pro is charged to its card: an admin adds one on the billing page (${ORIGIN}/console/w/${ws.id}/live/settings/billing), or pass --without-card to bill this workspace by invoice and settle its invoices with wsvc billing mark-paid.\n`,
    );
    // Nothing changed: still free, no change recorded.
    expect((await p.services.billing.subscriptionOf(ws.id)).plan.id).toBe('free');
    expect(
      await storage.db.selectFrom('subscription_changes').selectAll().where('workspace_id', '=', ws.id).execute(),
    ).toEqual([]);

    const forced = await wsvcWith(env, 'billing', 'set-plan', '--workspace', ws.id, '--plan', 'pro', '--without-card');
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toMatch(/^upgraded free → pro now; proration \$\d+\.\d\d on the next invoice\n$/);
    expect((await p.services.billing.subscriptionOf(ws.id)).plan.id).toBe('pro');

    const carded = await newWorkspace(p, 'Card on file');
    await addCard(carded.id);
    const up = await wsvcWith(env, 'billing', 'set-plan', '--workspace', carded.id, '--plan', 'scale', '--json');
    expect(up.code, up.stderr).toBe(0);
    expect(JSON.parse(up.stdout).result).toMatchObject({ change: 'upgraded', from: 'free', to: 'scale' });
  });

  it('refund: part, then more than is left (refused, nothing changed), then the rest; the invoice shows it over the API and the CLI', async () => {
    pnow = Date.now();
    const ws = await newWorkspace(p, 'Refunded');
    await addCard(ws.id);
    await p.services.billing.setPlan(cli(), ws.id, 'pro');
    const period = periodAt(pnow, pnow);
    pnow = period.end + 3_600_000;
    await p.services.billing.finalizeDue(p.services.uow.as(systemActor('scheduler:billing-invoices')));
    await p.services.billing.chargeDue(p.services.uow.as(systemActor('scheduler:billing-payments')), ws.id);
    const inv = await invoiceOf(ws);
    expect(inv).toMatchObject({ number: 'INV-1', status: 'paid', payment_status: 'succeeded', refunded_cents: 0 });
    const id = inv?.id as string;
    const total = inv?.total_cents as number;
    expect(total).toBeGreaterThan(100);
    const usd = (c: number) => `$${(c / 100).toFixed(2)}`;
    const refundsOf = () =>
      [...stripe.refunds.values()].filter(
        (r) => stripe.paymentIntents.get(r.payment_intent)?.metadata?.invoice_id === id,
      );

    const part = await wsvcWith(env, 'billing', 'refund', id, '--amount-cents', '100');
    expect(part.code, part.stderr).toBe(0);
    expect(part.stdout).toBe(`INV-1 refunded $1.00 of ${usd(total)}\n`);
    expect(refundsOf().map((r) => r.amount)).toEqual([100]);
    expect((await invoiceOf(ws))?.refunded_cents).toBe(100);

    const over = await wsvcWith(env, 'billing', 'refund', id, '--amount-cents', String(total));
    expect(over.code).toBe(1);
    expect(over.stderr).toBe(
      `error: validation_error: amount_cents must be from 1 to ${total - 100}, what is left to refund of INV-1 (100 of ${total} cents refunded so far).\n`,
    );
    expect(refundsOf()).toHaveLength(1);
    expect((await invoiceOf(ws))?.refunded_cents).toBe(100);
    const bad = await wsvcWith(env, 'billing', 'refund', id, '--amount-cents', '1.5');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('a whole number of US cents, at least 1');

    const rest = await wsvcWith(env, 'billing', 'refund', id, '--json');
    expect(rest.code, rest.stderr).toBe(0);
    expect(JSON.parse(rest.stdout).invoice).toMatchObject({ id, refunded_cents: total, status: 'paid' });
    expect(refundsOf().map((r) => r.amount)).toEqual([100, total - 100]);
    expect((await invoiceOf(ws))?.refunded_cents).toBe(total);
    const shown = await wsvcWith(env, 'billing', 'invoices', '--workspace', ws.id);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(
      new RegExp(
        `^${id}\\s+INV-1\\s.*\\spaid\\s+succeeded\\s+1 succeeded\\s.*\\s${usd(total).replace('$', '\\$')}$`,
        'm',
      ),
    );
    const again = await wsvcWith(env, 'billing', 'refund', id);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(
      `error: validation_error: Invoice INV-1 is already refunded in full (${total} cents): nothing is left to refund.\n`,
    );
    expect(refundsOf()).toHaveLength(2);
    const audit = json(await p.request({ method: 'GET', url: '/v1/audit-log?action=invoice.refunded', key: ws.test }));
    expect(audit.data).toHaveLength(2);
  });
});
