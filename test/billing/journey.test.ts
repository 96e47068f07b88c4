// Backends: sqlite — the laptop journey of docs/billing.md#the-journey, through `wsvc` child processes on one SQLite
// file; the storage rules of payments (both databases, PostgreSQL + Redis included) are payments.test.ts's
// Tier: full — about twenty `wsvc` child processes
// docs/billing.md#the-journey, run as written against the Stripe stand-in: the two settings, a workspace, a card added
// through the hosted page, the upgrade, the invoice finalized and charged by the worker's jobs on the CLI's shifted
// clock (`wsvc jobs run --at`), paid; then a declined card through dunning to 402 and back by replacing the card.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, startTestApp, type TestApp } from '../helpers/app.js';
import { ORIGIN, signInWithLink } from '../helpers/console.js';
import { databaseUrlOf } from '../helpers/processes.js';
import { openTestStorage } from '../helpers/storage.js';
import { CARDS, type StripeStandin, startStripeStandin } from '../helpers/stripe-standin.js';

const SECRET = 'sk_test_journey0123456789';
const WHSEC = 'whsec_journey0123456789';
let stripe: StripeStandin;
let t: TestApp;
let env: NodeJS.ProcessEnv;
let storage: Awaited<ReturnType<typeof openTestStorage>>;

beforeAll(async () => {
  stripe = await startStripeStandin({ secretKey: SECRET, webhookSecret: WHSEC });
  // Step 1: the two settings (and where the stand-in answers), for the API and for every `wsvc` command.
  const settings = { STRIPE_SECRET_KEY: SECRET, STRIPE_WEBHOOK_SECRET: WHSEC, STRIPE_API_BASE: stripe.base };
  storage = await openTestStorage();
  t = await startTestApp({ storage, config: { ...settings, PUBLIC_URL: ORIGIN } });
  env = {
    ...process.env,
    ...settings,
    PUBLIC_URL: ORIGIN,
    DATABASE_URL: databaseUrlOf(storage),
    LOG_LEVEL: 'silent',
  };
});
afterAll(async () => {
  await t?.close();
  await storage?.close();
  await stripe?.close();
});

/** `wsvc …` with the journey's settings: its JSON answer (exit 0 expected). */
async function wsvc<T = Record<string, unknown>>(...args: string[]): Promise<T> {
  const { stdout } = await promisify(execFile)(process.execPath, ['bin/wsvc.js', ...args, '--json'], { env });
  return JSON.parse(stdout) as T;
}

interface Invoice {
  id: string;
  number: string;
  status: string;
  payment_status: string;
  paid_at: string | null;
  next_payment_attempt_at: string | null;
  payment_attempts: { outcome: string; decline_code: string | null }[];
}

describe('wsvc jobs run (docs/operations.md#periodic-jobs)', () => {
  it('names the jobs when given another, and refuses a time without its offset; exit 2 and nothing run', async () => {
    const run = (...args: string[]) =>
      promisify(execFile)(process.execPath, ['bin/wsvc.js', 'jobs', 'run', ...args], { env }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
    const unknown = await run('billing-invoice');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('error: no job billing-invoice: one of purge-events,');
    expect(unknown.stderr).toContain('billing-payments');
    const noOffset = await run('billing-invoices', '--at', '2027-02-05T12:00:00');
    expect(noOffset.code).toBe(2);
    expect(noOffset.stderr).toContain('an ISO 8601 time with its offset, such as 2027-02-01T01:00:00Z');
  });
});

describe('the payments journey (docs/billing.md#the-journey)', { timeout: 240_000 }, () => {
  it('card, upgrade, an invoice charged and paid; a declined card through dunning to 402, and back with a new card', async () => {
    const created = await wsvc<{
      workspace: { id: string };
      set_password_url: string;
      keys: { live: { key: string } };
    }>('workspaces', 'create', '--name', 'Journey', '--admin-email', 'journey@example.test');
    const ws = created.workspace.id;
    const liveKey = created.keys.live.key;
    const admin = await signInWithLink(t, created.set_password_url);
    const live = () => t.request({ method: 'GET', url: '/v1/resources', key: liveKey });

    // Step 2: the admin adds a card on the hosted page and comes back to the billing page.
    const addCard = async (number: string) => {
      const started = await admin.call({ method: 'POST', url: '/console/api/billing/card/checkout', ws });
      expect(started.statusCode, started.body).toBe(200);
      const submitted = await fetch(json(started).data.url as string, {
        method: 'POST',
        body: new URLSearchParams({ number }),
        redirect: 'manual',
      });
      const back = submitted.headers.get('location') ?? '';
      const returned = await admin.call({ method: 'GET', url: back.slice(ORIGIN.length) });
      expect(returned.statusCode, returned.body).toBe(303);
      expect(returned.headers.location).toBe(`${ORIGIN}/console/w/${ws}/live/settings/billing?card=saved`);
      return json(await admin.call({ method: 'GET', url: '/console/api/billing/card', ws })).data.card;
    };
    expect(await addCard(CARDS.ok)).toMatchObject({ brand: 'visa', last4: '4242' });

    // Step 3: the upgrade, by the operator's command.
    const upgraded = await wsvc<{ result: { change: string } }>(
      'billing',
      'set-plan',
      '--workspace',
      ws,
      '--plan',
      'pro',
    );
    expect(upgraded.result.change).toBe('upgraded');

    // Step 4: an hour after the period ends the worker finalizes the invoice and charges it (here on the shifted clock).
    const shown = await wsvc<{ subscription: { current_period: { end: string } } }>(
      'billing',
      'show',
      '--workspace',
      ws,
    );
    const afterPeriod = (end: string) => new Date(Date.parse(end) + 2 * 3_600_000).toISOString();
    const firstAt = afterPeriod(shown.subscription.current_period.end);
    expect((await wsvc<{ handled: number }>('jobs', 'run', 'billing-invoices', '--at', firstAt)).handled).toBe(1);
    expect((await wsvc<{ handled: number }>('jobs', 'run', 'billing-payments', '--at', firstAt)).handled).toBe(1);
    const invoices = async () =>
      (await wsvc<{ invoices: Invoice[] }>('billing', 'invoices', '--workspace', ws)).invoices;
    const [first] = await invoices();
    expect(first).toMatchObject({ status: 'paid', payment_status: 'succeeded', paid_at: expect.any(String) });
    expect(first?.payment_attempts).toHaveLength(1);

    // Step 5: a card that is declined; the next period's invoice fails, is retried on the dunning schedule, and after
    // the last retry is uncollectible: live requests answer 402.
    expect(await addCard(CARDS.declined)).toMatchObject({ last4: '0002' });
    // Past the second period's end (a month is at most 31 days) and before the third's.
    const secondAt = afterPeriod(
      new Date(Date.parse(shown.subscription.current_period.end) + 32 * 86_400_000).toISOString(),
    );
    await wsvc('jobs', 'run', 'billing-invoices', '--at', secondAt);
    await wsvc('jobs', 'run', 'billing-payments', '--at', secondAt);
    let [second] = await invoices();
    expect(second).toMatchObject({ status: 'open', payment_status: 'failed' });
    expect(second?.payment_attempts[0]).toMatchObject({ outcome: 'failed', decline_code: 'generic_decline' });
    expect((await live()).statusCode).toBe(200);
    for (let retry = 1; second?.next_payment_attempt_at; retry++) {
      expect(retry).toBeLessThanOrEqual(4);
      const due = new Date(Date.parse(second.next_payment_attempt_at) + 1000).toISOString();
      await wsvc('jobs', 'run', 'billing-payments', '--at', due);
      [second] = await invoices();
    }
    expect(second).toMatchObject({ status: 'uncollectible', payment_status: 'failed' });
    expect(second?.payment_attempts).toHaveLength(5);
    const refused = await live();
    expect(refused.statusCode).toBe(402);
    expect(json(refused).error.code).toBe('payment_required');

    // A new card pays it at once, and live requests are answered again.
    expect(await addCard(CARDS.ok)).toMatchObject({ last4: '4242' });
    const [paid] = await invoices();
    expect(paid).toMatchObject({ id: second?.id, status: 'paid', payment_status: 'succeeded' });
    expect((await live()).statusCode).toBe(200);
  });
});
