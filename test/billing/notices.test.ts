import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ParsedMail } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { ORIGIN, signInWithLink } from '../helpers/console.js';
import { mailTo, type Smtp, startSmtp } from '../helpers/smtp.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — thresholds told once each with two workers on one database
// Tier: full — each notice goes through a real SMTP server and the notification worker
// Usage and billing notifications (docs/billing.md#notifications): the admins are told at 50,
// 80 and 100 % of the included requests once per period each, and when an invoice is issued, per
// their preferences; emails in their timezone over a real SMTP server. Two apps on one database
// stand for two workers. Time is the injected clock.
const PLANS = {
  plans: [
    {
      id: 'free',
      name: 'Free',
      base_price_cents: 0,
      included_requests: 10_000,
      hard_cap: true,
      overage_unit_requests: null,
      overage_unit_price_cents: null,
      max_resources: 3,
      max_webhooks: 1,
    },
    {
      id: 'pro',
      name: 'Pro',
      base_price_cents: 4_900,
      included_requests: 100_000,
      hard_cap: false,
      overage_unit_requests: 10,
      overage_unit_price_cents: 50,
      max_resources: 10,
      max_webhooks: 2,
    },
    {
      id: 'metered',
      name: 'Metered',
      base_price_cents: 9_900,
      included_requests: null,
      hard_cap: false,
      overage_unit_requests: 1_000,
      overage_unit_price_cents: 10,
      max_resources: null,
      max_webhooks: 16,
    },
  ],
};

const T = (iso: string) => Date.parse(iso);
let now = T('2028-03-10T12:00:00.000Z');
const clock = { now: () => now };
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let smtp: Smtp;
let a: TestApp;
let b: TestApp;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-plans-'));
  const file = join(dir, 'plans.json');
  writeFileSync(file, JSON.stringify(PLANS));
  smtp = await startSmtp();
  storage = await openTestStorage();
  const config = {
    USAGE_FLUSH_MS: 600_000,
    PLANS_FILE: file,
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    PUBLIC_URL: ORIGIN,
  };
  a = await startTestApp({ storage, clock, config });
  b = await startTestApp({ storage, clock, config });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await storage?.close();
  await smtp?.close();
});

/** `n` billable live requests at the clock's time, written by a real flush. */
async function use(workspaceId: string, n: number) {
  for (let i = 0; i < n; i++) {
    a.services.usage.meter.record({
      workspaceId,
      env: 'live',
      keyId: 'key_x',
      route: 'GET /v1/users/me',
      status: 200,
      latencyMs: 1,
    });
  }
  await a.services.usage.meter.flush();
}
/** Both workers run the job at once. */
const runBoth = () =>
  Promise.all([
    a.services.billing.notifyUsage(a.services.uow.as(systemActor('scheduler:billing-usage-notices'))),
    b.services.billing.notifyUsage(b.services.uow.as(systemActor('scheduler:billing-usage-notices'))),
  ]);
const notices = async (ws: TestWorkspace, userId: string, type = 'usage.threshold') =>
  (await a.services.notifications.ofUser(ws.id, userId))
    .filter((r) => r.type === type)
    .map((r) => ({ ...r, data: JSON.parse(r.data) }))
    .reverse();
const thresholds = async (ws: TestWorkspace, userId: string) =>
  (await notices(ws, userId)).map((n) => n.data.threshold as number);
const recorded = (workspaceId: string) =>
  storage.db
    .selectFrom('usage_notices')
    .select(['period_start', 'threshold'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('period_start')
    .orderBy('threshold')
    .execute();
const send = () => a.services.notifications.sendDue(a.services.uow.as(systemActor('scheduler:send-notifications')));
const unsubscribe = (m: ParsedMail | undefined) =>
  m?.headerLines.find((h) => h.key === 'list-unsubscribe')?.line.replace(/^List-Unsubscribe:\s*/i, '');

async function adminIn(ws: TestWorkspace, timezone: string) {
  const m = await ws.member('admin');
  const res = await a.request({ method: 'PATCH', url: '/v1/users/me', key: m.live, body: { timezone } });
  expect(res.statusCode, res.body).toBe(200);
  return { ...m, email: json(res).data.email as string };
}

describe('usage notifications (docs/billing.md#notifications)', () => {
  it('50 %, 80 %, 100 % of the included requests: exactly at the boundary, once each with two workers', async () => {
    now = T('2028-03-10T12:00:00.000Z');
    const ws = await newWorkspace(a);
    const paris = await adminIn(ws, 'Europe/Paris');
    const member = await ws.member('member');

    // 4,999 of 10,000 is 49.99 %: nothing. (Setting the timezone above was a billable request too.)
    await use(ws.id, 0);
    const before = (await a.services.billing.subscriptionOf(ws.id)).usage.billable_requests;
    expect(before).toBeGreaterThan(0);
    await use(ws.id, 4_999 - before);
    expect((await a.services.billing.subscriptionOf(ws.id)).usage.billable_requests).toBe(4_999);
    await runBoth();
    expect(await thresholds(ws, ws.adminId)).toEqual([]);
    expect(await recorded(ws.id)).toEqual([]);

    // The 5,000th: 50 %, one notification per admin although both workers ran.
    await use(ws.id, 1);
    const [x, y] = await runBoth();
    expect(x + y).toBeGreaterThanOrEqual(1);
    expect(await thresholds(ws, ws.adminId)).toEqual([50]);
    expect(await thresholds(ws, paris.userId)).toEqual([50]);
    expect(await thresholds(ws, member.userId)).toEqual([]);
    // Running again (both workers, several times) writes nothing more.
    await runBoth();
    await runBoth();
    expect(await thresholds(ws, ws.adminId)).toEqual([50]);

    await use(ws.id, 2_999); // 7,999: 79.99 %
    await runBoth();
    expect(await thresholds(ws, ws.adminId)).toEqual([50]);
    await use(ws.id, 1); // 8,000
    await runBoth();
    expect(await thresholds(ws, ws.adminId)).toEqual([50, 80]);
    await use(ws.id, 2_000); // 10,000: the cap
    await runBoth();
    await runBoth();
    expect(await thresholds(ws, ws.adminId)).toEqual([50, 80, 100]);
    expect(await thresholds(ws, paris.userId)).toEqual([50, 80, 100]);
    // The platform events (docs/api.md#platform-events) of the two workers' runs: one per threshold, and the
    // free plan's hard cap once, written with the notices, to live endpoints.
    const platform = await storage.db
      .selectFrom('events')
      .select(['type', 'env', 'payload'])
      .where('workspace_id', '=', ws.id)
      .where('type', 'in', ['usage.threshold', 'usage.cap_reached'])
      .orderBy('id')
      .execute();
    expect(platform.map((e) => [e.type, e.env, JSON.parse(e.payload).data.threshold])).toEqual([
      ['usage.threshold', 'live', 50],
      ['usage.threshold', 'live', 80],
      ['usage.threshold', 'live', 100],
      ['usage.cap_reached', 'live', undefined],
    ]);
    const top = (await notices(ws, paris.userId)).at(-1);
    expect(top?.category).toBe('usage');
    expect(top?.data).toMatchObject({
      threshold: 100,
      billable_requests: 10_000,
      included_requests: 10_000,
      plan: 'free',
      hard_cap: true,
      period_start: '2028-03-10T00:00:00.000Z',
      period_end: '2028-04-10T00:00:00.000Z',
    });

    // The emails: in the recipient's timezone with UTC beside it, List-Unsubscribe, the billing page.
    await send();
    const mails = mailTo(smtp, paris.email).filter((m) => m.subject?.startsWith('Usage at'));
    expect(mails.map((m) => m.subject)).toEqual([
      'Usage at 50 % of included requests: 5,000 of 10,000',
      'Usage at 80 % of included requests: 8,000 of 10,000',
      'Usage at 100 % of included requests: 10,000 of 10,000',
    ]);
    const last = mails[2];
    expect(last?.text).toContain('The period ends at 10 Apr 2028, 02:00 CEST (Europe/Paris) · 2028-04-10 00:00 UTC.');
    expect(last?.text).toContain('429 quota_exceeded');
    expect(last?.text).toContain(`${ORIGIN}/console/w/${ws.id}/live/settings/billing`);
    expect(last?.html).toContain('Open billing');
    expect(unsubscribe(last)).toBe(`<${ORIGIN}/console/w/${ws.id}/live/settings/profile#notifications>`);
    expect(last?.messageId).toBe(`<${top?.id}@127.0.0.1>`);

    // A new period starts over: nothing at its first instant, 50 % again at 5,000.
    now = T('2028-04-10T00:00:00.000Z');
    await runBoth();
    expect(await thresholds(ws, ws.adminId)).toEqual([50, 80, 100]);
    await use(ws.id, 5_000);
    await runBoth();
    expect(await thresholds(ws, ws.adminId)).toEqual([50, 80, 100, 50]);
    expect((await notices(ws, ws.adminId)).at(-1)?.data.period_start).toBe('2028-04-10T00:00:00.000Z');
  });

  it('a jump past several thresholds records them all and tells the highest once', async () => {
    now = T('2028-03-10T12:00:00.000Z');
    const ws = await newWorkspace(a);
    await use(ws.id, 9_000);
    await runBoth();
    expect(await thresholds(ws, ws.adminId)).toEqual([80]);
    expect((await recorded(ws.id)).map((r) => r.threshold)).toEqual([50, 80]);
    await use(ws.id, 1_000);
    await runBoth();
    expect(await thresholds(ws, ws.adminId)).toEqual([80, 100]);
  });

  it('only plans with included requests; preferences per admin', async () => {
    now = T('2028-03-10T12:00:00.000Z');
    const metered = await newWorkspace(a);
    await a.services.billing.setPlan(a.services.uow.as(systemActor('cli')), metered.id, 'metered');
    await use(metered.id, 50_000);
    await runBoth();
    expect(await thresholds(metered, metered.adminId)).toEqual([]);
    expect(await recorded(metered.id)).toEqual([]);

    // One admin keeps only the feed for usage, one turns usage off: the first gets a row not emailed.
    const ws = await newWorkspace(a);
    const feedOnly = await ws.member('admin');
    const off = await ws.member('admin');
    const clients = new Map<string, Awaited<ReturnType<typeof signInWithLink>>>();
    for (const [userId, email] of [
      [feedOnly.userId, false],
      [off.userId, false],
    ] as const) {
      const row = await a.services.users.row(storage.db, userId);
      const link = await a.services.consoleAuth.makeLink(
        a.services.uow.as(systemActor('cli')),
        'set_password',
        row?.email ?? '',
        {},
      );
      const client = await signInWithLink(a, link.url);
      clients.set(userId, client);
      const res = await client.call({
        method: 'PUT',
        url: '/console/api/notifications/preferences',
        ws: ws.id,
        body: { preferences: [{ category: 'usage', email, in_app: userId === feedOnly.userId }] },
      });
      expect(res.statusCode, res.body).toBe(200);
    }
    await use(ws.id, 5_000);
    await runBoth();
    expect(await thresholds(ws, ws.adminId)).toEqual([50]);
    expect(await thresholds(ws, off.userId)).toEqual([]);
    const kept = await notices(ws, feedOnly.userId);
    expect(kept.map((n) => [n.data.threshold, n.status])).toEqual([[50, 'skipped']]);
    // In the console's feed, with its title.
    const feed = await clients
      .get(feedOnly.userId)
      ?.call({ method: 'GET', url: '/console/api/notifications', ws: ws.id });
    expect(feed?.statusCode, feed?.body).toBe(200);
    expect(json(feed as NonNullable<typeof feed>).data[0]).toMatchObject({
      category: 'usage',
      type: 'usage.threshold',
      title: 'Usage at 50 % of included requests: 5,000 of 10,000',
      read_at: null,
    });
    const offFeed = await clients
      .get(off.userId)
      ?.call({ method: 'GET', url: '/console/api/notifications', ws: ws.id });
    expect(
      json(offFeed as NonNullable<typeof offFeed>).data.filter((n: { category: string }) => n.category === 'usage'),
    ).toEqual([]);
  });
});

describe('invoice notifications (docs/billing.md#notifications)', () => {
  it('written with the invoice, once with two workers; the email names the total in the admin timezone', async () => {
    now = T('2028-05-20T09:30:00.000Z');
    const ws = await newWorkspace(a);
    const tokyo = await adminIn(ws, 'Asia/Tokyo');
    // Upgrade half way: the invoice has a proration line.
    now = T('2028-06-04T09:30:00.000Z');
    await a.services.billing.setPlan(a.services.uow.as(systemActor('cli')), ws.id, 'pro');
    const upcoming = (await a.services.billing.subscriptionOf(ws.id)).upcoming_invoice;
    // 59 minutes 59.999 s after the period's end: not yet.
    now = T('2028-06-20T00:59:59.999Z');
    await Promise.all([
      a.services.billing.finalizeDue(a.services.uow.as(systemActor('scheduler:billing-invoices'))),
      b.services.billing.finalizeDue(b.services.uow.as(systemActor('scheduler:billing-invoices'))),
    ]);
    expect(await notices(ws, tokyo.userId, 'invoice.issued')).toEqual([]);
    now = T('2028-06-20T01:00:00.000Z');
    await Promise.all([
      a.services.billing.finalizeDue(a.services.uow.as(systemActor('scheduler:billing-invoices'))),
      b.services.billing.finalizeDue(b.services.uow.as(systemActor('scheduler:billing-invoices'))),
    ]);
    const got = await notices(ws, tokyo.userId, 'invoice.issued');
    expect(got).toHaveLength(1);
    expect(await notices(ws, ws.adminId, 'invoice.issued')).toHaveLength(1);
    const invoice = (await a.services.billing.invoicesOf(ws.id, { limit: 10, offset: 0, afterId: null })).items[0];
    expect(invoice?.total_cents).toBe(upcoming.total_cents);
    expect(got[0]?.category).toBe('billing');
    expect(got[0]?.data).toMatchObject({
      invoice_id: invoice?.id,
      number: 'INV-1',
      total_cents: upcoming.total_cents,
      period_start: '2028-05-20T00:00:00.000Z',
      period_end: '2028-06-20T00:00:00.000Z',
    });

    await send();
    const mail = mailTo(smtp, tokyo.email).find((m) => m.subject?.startsWith('Invoice'));
    const dollars = `$${(upcoming.total_cents / 100).toFixed(2)}`;
    expect(mail?.subject).toBe(`Invoice INV-1 issued: ${dollars}`);
    expect(mail?.text).toContain('20 May 2028, 09:00 GMT+9 (Asia/Tokyo) · 2028-05-20 00:00 UTC');
    expect(mail?.text).toContain(`Total: ${dollars} (USD).`);
    expect(unsubscribe(mail)).toBe(`<${ORIGIN}/console/w/${ws.id}/live/settings/profile#notifications>`);
  });
});
