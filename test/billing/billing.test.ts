import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { NewInvoice } from '../../src/db/types.js';
import { systemActor } from '../../src/kernel/principal.js';
import { billingRepository } from '../../src/modules/billing/billing.repository.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/expect.js';
import { type CuttableProxy, hostPort, startProxy, viaPort } from '../helpers/proxy.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — invoices finalized once by two workers (unique constraints), counted usage, and the free cap shared in Redis
// Tier: quick
// Small plans, so the integration tests reach every limit and overage with a few requests.
// (The default plans of docs/billing.md#plans are checked in src/modules/billing/periods.test.ts.)
const PLANS = {
  plans: [
    {
      id: 'free',
      name: 'Free',
      base_price_cents: 0,
      included_requests: 50,
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
      included_requests: 100,
      hard_cap: false,
      overage_unit_requests: 10,
      overage_unit_price_cents: 50,
      max_resources: 10,
      max_webhooks: 2,
    },
    {
      id: 'scale',
      name: 'Scale',
      base_price_cents: 49_900,
      included_requests: 1_000,
      hard_cap: false,
      overage_unit_requests: 10,
      overage_unit_price_cents: 25,
      max_resources: null,
      max_webhooks: 16,
    },
  ],
};

const T = (iso: string) => Date.parse(iso);

describe('billing (docs/billing.md)', () => {
  let storage: Awaited<ReturnType<typeof openTestStorage>>;
  let a: TestApp;
  let b: TestApp;
  let now = T('2028-01-31T15:00:00.000Z');
  const clock = { now: () => now };
  const cli = systemActor('cli');
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wsvc-plans-'));
    const file = join(dir, 'plans.json');
    writeFileSync(file, JSON.stringify(PLANS));
    storage = await openTestStorage();
    // Two apps on one database: two API processes, and two workers running the invoicing job.
    const config = { USAGE_FLUSH_MS: 600_000, PLANS_FILE: file };
    a = await startTestApp({ storage, clock, config });
    b = await startTestApp({ storage, clock, config });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await storage?.close();
  });

  /** `n` answered requests of a live key, as the meter counts them (a real flush writes them). */
  const meter = (t: TestApp, workspaceId: string, n: number, status = 200, env: 'live' | 'test' = 'live') => {
    for (let i = 0; i < n; i++) {
      t.services.usage.meter.record({
        workspaceId,
        env,
        keyId: 'key_x',
        route: 'GET /v1/users/me',
        status,
        latencyMs: 1,
      });
    }
  };
  const flush = () => Promise.all([a.services.usage.meter.flush(), b.services.usage.meter.flush()]);
  const finalizeBoth = async () => {
    const [x, y] = await Promise.all([
      a.services.billing.finalizeDue(a.services.uow.as(systemActor('scheduler:billing-invoices'))),
      b.services.billing.finalizeDue(b.services.uow.as(systemActor('scheduler:billing-invoices'))),
    ]);
    return x + y;
  };
  const invoiceRows = (workspaceId: string) =>
    storage.db.selectFrom('invoices').selectAll().where('workspace_id', '=', workspaceId).orderBy('number').execute();

  it('starts every workspace on free, its periods anchored at its creation day (00:00 UTC)', async () => {
    now = T('2028-01-31T15:00:00.000Z');
    const ws = await newWorkspace(a);
    const sub = await a.services.billing.subscriptionOf(ws.id);
    expect(sub.plan.id).toBe('free');
    expect(sub.current_period).toEqual({ start: '2028-01-31T00:00:00.000Z', end: '2028-02-29T00:00:00.000Z' });
    expect(sub.pending_change).toBeNull();
    expect(sub.upcoming_invoice.total_cents).toBe(0);
    now = T('2028-02-29T00:00:00.000Z');
    expect((await a.services.billing.subscriptionOf(ws.id)).current_period).toEqual({
      start: '2028-02-29T00:00:00.000Z',
      end: '2028-03-31T00:00:00.000Z',
    });
  });

  it('bills live requests not answered 429 or 5xx; test requests never', async () => {
    now = T('2028-01-31T15:00:00.000Z');
    const ws = await newWorkspace(a);
    // Real requests through both processes: 3 live 200s, 2 live 404s (billable), 4 test ones (not).
    for (let i = 0; i < 3; i++) await a.request({ method: 'GET', url: '/v1/users/me', key: ws.live });
    for (let i = 0; i < 2; i++) {
      const res = await b.request({ method: 'GET', url: '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R', key: ws.live });
      expect(res.statusCode).toBe(404);
    }
    for (let i = 0; i < 4; i++) await b.request({ method: 'GET', url: '/v1/users/me', key: ws.test });
    // Answers the meter also sees: 429s and 5xx, which are not billable.
    meter(a, ws.id, 2, 429);
    meter(a, ws.id, 1, 503);
    meter(b, ws.id, 1, 500);
    meter(b, ws.id, 1, 499);
    const before = await a.services.billing.subscriptionOf(ws.id);
    expect(before.usage.billable_requests).toBe(0); // nothing flushed yet: nothing written on the request path
    await flush();
    const sub = await a.services.billing.subscriptionOf(ws.id);
    expect(sub.usage).toEqual({ billable_requests: 6, included_requests: 50 });
  });

  it('upgrade prorated to the cent, overage per started unit, invoices finalized once by two workers, numbered in order', async () => {
    now = T('2028-01-31T15:00:00.000Z');
    const ws = await newWorkspace(a);
    const other = await newWorkspace(a); // its invoices are numbered on their own
    meter(a, ws.id, 60);
    await flush();
    // Period 0 is 2028-01-31 → 2028-02-29 (29 days, 2,505,600 s). Upgrade half-way: 1,252,800 s left.
    now = T('2028-02-14T12:00:00.000Z');
    expect(await a.services.billing.setPlan(a.services.uow.as(cli), ws.id, 'pro')).toEqual({
      change: 'upgraded',
      from: 'free',
      to: 'pro',
      proration_cents: 2_450,
    });
    const upcoming = (await a.services.billing.subscriptionOf(ws.id)).upcoming_invoice;
    expect(upcoming.lines.map((l) => [l.kind, l.amount_cents])).toEqual([
      ['base', 0],
      ['proration', 2_450],
    ]);
    meter(b, ws.id, 60);
    // The last millisecond of period 0 and the first of period 1.
    now = T('2028-02-28T23:59:59.999Z');
    meter(a, ws.id, 1);
    now = T('2028-02-29T00:00:00.000Z');
    meter(b, ws.id, 7);
    await flush();
    // An hour after the end, not a millisecond before.
    now = T('2028-02-29T00:59:59.999Z');
    expect(await finalizeBoth()).toBe(0);
    now = T('2028-02-29T01:00:00.000Z');
    // Every workspace of this file (four by now) gets its one invoice, whichever worker won it.
    expect(await finalizeBoth()).toBe(4);
    expect((await invoiceRows(ws.id)).length).toBe(1);
    expect((await invoiceRows(other.id)).length).toBe(1);
    expect(await finalizeBoth()).toBe(0);
    const [first] = await a.services.billing
      .invoicesOf(ws.id, { limit: 20, offset: 0, afterId: null })
      .then((p) => p.items);
    expect(first).toMatchObject({
      number: 'INV-1',
      status: 'open',
      period_start: '2028-01-31T00:00:00.000Z',
      period_end: '2028-02-29T00:00:00.000Z',
      plan: 'pro',
      billable_requests: 121,
      total_cents: 2_600,
    });
    expect(first?.lines).toEqual([
      {
        kind: 'base',
        description: 'Free plan, 2028-01-31 to 2028-02-29',
        quantity: 1,
        unit_price_cents: 0,
        amount_cents: 0,
      },
      {
        kind: 'proration',
        description:
          'Upgrade Free to Pro at 2028-02-14T12:00:00.000Z: 1,252,800 of 2,505,600 seconds left × ($49.00 − $0.00)',
        quantity: 1,
        unit_price_cents: 2_450,
        amount_cents: 2_450,
      },
      // 121 − 100 = 21 over: 3 started units of 10 at 50 ¢.
      {
        kind: 'overage',
        description: '21 requests over the 100 included in Pro, per started 10',
        quantity: 3,
        unit_price_cents: 50,
        amount_cents: 150,
      },
    ]);
    const frozen = await invoiceRows(ws.id);

    // A downgrade waits for the period's end, and is refused while the live environment holds too much.
    now = T('2028-03-10T08:00:00.000Z');
    const res = (k: string) =>
      a.request({ method: 'POST', url: '/v1/resources', key: k, body: { name: 'r', type: 'standard' } });
    for (let i = 0; i < 5; i++) expect((await res(ws.test)).statusCode).toBe(201); // test resources do not count
    const live = [];
    for (let i = 0; i < 4; i++) live.push((await res(ws.live)).json().data.id as string);
    await expect(a.services.billing.setPlan(a.services.uow.as(cli), ws.id, 'free')).rejects.toMatchObject({
      statusCode: 409,
      code: 'downgrade_blocked',
      message: 'Cannot move to Free: resources: 4 in the live environment, Free allows 3. Delete the excess first.',
    });
    expect((await a.services.billing.subscriptionOf(ws.id)).pending_change).toBeNull();
    await a.request({ method: 'DELETE', url: `/v1/resources/${live[0]}`, key: ws.live });
    expect(await a.services.billing.setPlan(a.services.uow.as(cli), ws.id, 'free')).toEqual({
      change: 'downgrade_scheduled',
      from: 'pro',
      to: 'free',
      effective_at: '2028-03-31T00:00:00.000Z',
    });
    const sub = await a.services.billing.subscriptionOf(ws.id);
    expect(sub.plan.id).toBe('pro');
    expect(sub.pending_change).toEqual({ plan: 'free', effective_at: '2028-03-31T00:00:00.000Z' });
    await expect(a.services.billing.setPlan(a.services.uow.as(cli), ws.id, 'gold')).rejects.toMatchObject({
      statusCode: 400,
    });

    // Two months later: periods 1, 2 and 3 are finalized in order, the downgrade applied at period 1's end.
    now = T('2028-05-31T01:00:00.000Z');
    expect(await finalizeBoth()).toBe(4 * 3);
    expect(await finalizeBoth()).toBe(0);
    const rows = await invoiceRows(ws.id);
    expect(rows.map((r) => [r.number, r.period_start.slice(0, 10), r.plan, Number(r.total_cents)])).toEqual([
      [1, '2028-01-31', 'pro', 2_600],
      [2, '2028-02-29', 'pro', 4_900],
      [3, '2028-03-31', 'free', 0],
      [4, '2028-04-30', 'free', 0],
    ]);
    expect((await invoiceRows(other.id)).map((r) => r.number)).toEqual([1, 2, 3, 4]);
    expect((await a.services.billing.subscriptionOf(ws.id)).plan.id).toBe('free');
    expect(rows[0]).toEqual(frozen[0]); // finalized invoices never change

    // Newest first, cursor paging.
    const page1 = await a.services.billing.invoicesOf(ws.id, { limit: 3, offset: 0, afterId: null });
    expect(page1.items.map((i) => i.number)).toEqual(['INV-4', 'INV-3', 'INV-2']);
    expect(page1.total).toBe(4);
    const lastId = page1.items[2]?.id ?? '';
    const page2 = await a.services.billing.invoicesOf(ws.id, { limit: 3, offset: 0, afterId: lastId, afterOffset: 3 });
    expect(page2.items.map((i) => i.number)).toEqual(['INV-1']);
    expect(page2.nextCursor).toBeNull();

    // open → paid once; then it stays paid, amounts untouched.
    const id = frozen[0]?.id ?? '';
    const paid = await a.services.billing.settle(a.services.uow.as(cli), id, 'paid');
    expect(paid).toMatchObject({ status: 'paid', paid_at: '2028-05-31T01:00:00.000Z', total_cents: 2_600 });
    await expect(a.services.billing.settle(a.services.uow.as(cli), id, 'void')).rejects.toMatchObject({
      statusCode: 409,
      code: 'invoice_not_open',
    });
    const after = (await invoiceRows(ws.id))[0];
    expect({ ...after, status: 'open', paid_at: null }).toEqual(frozen[0]);
  });

  it('the unique constraints refuse a second invoice for a period or a number, harmlessly (ON CONFLICT DO NOTHING)', async () => {
    const ws = await newWorkspace(a);
    const row = (id: string, number: number, start: string): NewInvoice => ({
      id,
      workspace_id: ws.id,
      number,
      period_start: start,
      period_end: '2030-02-01T00:00:00.000Z',
      plan: 'free',
      billable_requests: 0,
      currency: 'usd',
      total_cents: 0,
      status: 'open',
      finalized_at: '2030-02-01T01:00:00.000Z',
      paid_at: null,
      voided_at: null,
    });
    const insert = (r: NewInvoice) =>
      a.services.uow.as(cli).run(({ trx }) => billingRepository.insertInvoice(trx, r, []));
    expect(await insert(row('inv_01JD0000000000000000000001', 1, '2030-01-01T00:00:00.000Z'))).toBe(true);
    // Same period (another worker's number), same number (another period): nothing inserted, no error.
    expect(await insert(row('inv_01JD0000000000000000000002', 2, '2030-01-01T00:00:00.000Z'))).toBe(false);
    expect(await insert(row('inv_01JD0000000000000000000003', 1, '2030-02-01T00:00:00.000Z'))).toBe(false);
    expect((await invoiceRows(ws.id)).map((r) => r.id)).toEqual(['inv_01JD0000000000000000000001']);
  });

  it('GET /v1/billing/subscription and /v1/billing/invoices: admins only, the same from live and test keys', async () => {
    now = T('2028-01-31T15:00:00.000Z');
    const ws = await newWorkspace(a);
    meter(a, ws.id, 12);
    await flush();
    now = T('2028-02-14T12:00:00.000Z');
    await a.services.billing.setPlan(a.services.uow.as(cli), ws.id, 'pro');
    for (const key of [ws.live, ws.test]) {
      const res = await b.request({ method: 'GET', url: '/v1/billing/subscription', key });
      expect(res.statusCode, res.body).toBe(200);
      const sub = json(res).data;
      expect(sub.plan).toEqual(PLANS.plans[1]);
      expect(sub.current_period).toEqual({ start: '2028-01-31T00:00:00.000Z', end: '2028-02-29T00:00:00.000Z' });
      expect(sub.usage).toEqual({ billable_requests: 12, included_requests: 100 });
      expect(sub.upcoming_invoice).toMatchObject({ plan: 'pro', total_cents: 2_450, billable_requests: 12 });
    }
    const member = await ws.member('member');
    expectError(
      await a.request({ method: 'GET', url: '/v1/billing/subscription', key: member.live }),
      403,
      'insufficient_scope',
    );
    expectError(
      await a.request({ method: 'GET', url: '/v1/billing/invoices', key: member.live }),
      403,
      'insufficient_scope',
    );

    let res = await a.request({ method: 'GET', url: '/v1/billing/invoices', key: ws.live });
    expect(json(res)).toEqual({ data: [], meta: { total: 0, limit: 20, offset: 0, next_cursor: null } });
    now = T('2028-04-30T01:00:00.000Z');
    await finalizeBoth();
    res = await a.request({ method: 'GET', url: '/v1/billing/invoices?limit=1', key: ws.live });
    expect(res.statusCode, res.body).toBe(200);
    const body = json(res);
    expect(body.data.map((i: { number: string }) => i.number)).toEqual(['INV-3']);
    expect(body.meta).toMatchObject({ total: 3, limit: 1, offset: 0 });
    res = await a.request({
      method: 'GET',
      url: `/v1/billing/invoices?limit=5&cursor=${body.meta.next_cursor}`,
      key: ws.live,
    });
    const rest = json(res);
    expect(rest.data.map((i: { number: string; total_cents: number }) => [i.number, i.total_cents])).toEqual([
      ['INV-2', 4_900],
      ['INV-1', 2_450],
    ]);
    expect(rest.meta).toMatchObject({ total: 3, offset: 1, next_cursor: null });
    expectError(
      await a.request({ method: 'GET', url: '/v1/billing/invoices?cursor=bogus', key: ws.live }),
      400,
      'validation_error',
    );
  });
});

describe('plan limits on creation, PLAN_LIMITS=on (docs/billing.md#plan-limits)', () => {
  let storage: Awaited<ReturnType<typeof openTestStorage>>;
  let t: TestApp;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wsvc-plans-'));
    const file = join(dir, 'plans.json');
    writeFileSync(file, JSON.stringify(PLANS));
    storage = await openTestStorage();
    t = await startTestApp({
      storage,
      config: { PLANS_FILE: file, PLAN_LIMITS: 'on' },
      resolveHost: async () => ['93.184.216.34'],
    });
  });
  afterAll(async () => {
    await t?.close();
    await storage?.close();
  });
  const resource = (key: string) =>
    t.request({ method: 'POST', url: '/v1/resources', key, body: { name: 'r', type: 'standard' } });
  const webhook = (key: string) =>
    t.request({ method: 'POST', url: '/v1/webhooks', key, body: { url: 'https://example.com/h', events: ['*'] } });
  const count = async (key: string, what: 'resources' | 'webhooks') =>
    json(await t.request({ method: 'GET', url: `/v1/${what}`, key })).meta.total;

  it('refuses the live resource and webhook over the free plan with 403 plan_limit_exceeded; test keys never', async () => {
    const ws = await newWorkspace(t);
    // Five at once against a limit of three: exactly three are made (the workspace lock serialises them).
    const statuses = (await Promise.all([1, 2, 3, 4, 5].map(() => resource(ws.live)))).map((r) => r.statusCode);
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 403)).toHaveLength(2);
    const err = expectError(await resource(ws.live), 403, 'plan_limit_exceeded');
    expect(err.message).toBe(
      'Plan limit max_resources reached: the Free plan allows 3 resources per environment and the live environment has 3. Delete one or move to a larger plan.',
    );
    expect(await count(ws.live, 'resources')).toBe(3);
    for (let i = 0; i < 5; i++) expect((await resource(ws.test)).statusCode).toBe(201);

    expect((await webhook(ws.live)).statusCode).toBe(201);
    const hookErr = expectError(await webhook(ws.live), 403, 'plan_limit_exceeded');
    expect(hookErr.message).toContain(
      'Plan limit max_webhooks reached: the Free plan allows 1 webhooks per environment',
    );
    expect(await count(ws.live, 'webhooks')).toBe(1);
    for (let i = 0; i < 3; i++) expect((await webhook(ws.test)).statusCode).toBe(201);

    // An upgrade lifts the limits at once.
    await t.services.billing.setPlan(t.services.uow.as(systemActor('cli')), ws.id, 'pro');
    expect((await resource(ws.live)).statusCode).toBe(201);
    expect((await webhook(ws.live)).statusCode).toBe(201);
    expectError(await webhook(ws.live), 403, 'plan_limit_exceeded');
  });
});

describe('the free cap, PLAN_LIMITS=on (docs/billing.md#the-free-cap)', () => {
  let storage: Awaited<ReturnType<typeof openTestStorage>>;
  let a: TestApp;
  let b: TestApp;
  let now = T('2028-01-31T15:00:00.000Z');
  const clock = { now: () => now };
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wsvc-plans-'));
    const file = join(dir, 'plans.json');
    writeFileSync(file, JSON.stringify(PLANS));
    storage = await openTestStorage();
    // Two API processes on one database; their meters flush when the test says.
    const config = { PLANS_FILE: file, PLAN_LIMITS: 'on' as const, USAGE_FLUSH_MS: 600_000 };
    a = await startTestApp({ storage, clock, config });
    b = await startTestApp({ storage, clock, config });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await storage?.close();
  });
  const me = (t: TestApp, key: string) => t.request({ method: 'GET', url: '/v1/users/me', key });
  const statuses = async (t: TestApp, key: string, n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await me(t, key)).statusCode);
    return out;
  };

  it('refuses the live request over the cap with 429 quota_exceeded and Retry-After to the period end, across two processes; test keys never', async () => {
    const ws = await newWorkspace(a);
    expect(await statuses(a, ws.live, 30)).toEqual(new Array(30).fill(200));
    expect(await statuses(a, ws.test, 5)).toEqual(new Array(5).fill(200));
    await a.services.usage.meter.flush();
    // b reads the 30 a wrote and counts its own: the 20th is the 50th billable request, the 21st is refused.
    expect(await statuses(b, ws.live, 20)).toEqual(new Array(20).fill(200));
    const refused = await me(b, ws.live);
    const err = expectError(refused, 429, 'quota_exceeded');
    expect(err.message).toContain('used the 50 live requests its plan allows this period');
    // 2028-01-31T15:00 → 2028-02-29T00:00: 28 days and 9 hours.
    expect(refused.headers['retry-after']).toBe(String(28 * 86_400 + 9 * 3_600));
    expect((await me(b, ws.test)).statusCode).toBe(200);
    // a sees b's requests once b has written them (a re-reads after its own flush, or a flush interval on).
    await b.services.usage.meter.flush();
    expectError(await me(a, ws.live), 429, 'quota_exceeded');
    // The last second of the period: Retry-After 1; its end: a new period, answered again.
    now = T('2028-02-28T23:59:59.000Z');
    const last = await me(b, ws.live);
    expectError(last, 429, 'quota_exceeded');
    expect(last.headers['retry-after']).toBe('1');
    now = T('2028-02-29T00:00:00.000Z');
    expect((await me(a, ws.live)).statusCode).toBe(200);
    expect((await me(b, ws.live)).statusCode).toBe(200);
    // The refused requests were not billed: exactly the cap in the first period.
    await Promise.all([a.services.usage.meter.flush(), b.services.usage.meter.flush()]);
    expect(await a.services.usage.billableCount(ws.id, T('2028-01-31T00:00:00Z'), T('2028-02-29T00:00:00Z'))).toBe(50);
    expect(await a.services.usage.billableCount(ws.id, T('2028-02-29T00:00:00Z'), T('2028-03-31T00:00:00Z'))).toBe(2);
  });

  it('an upgrade lifts the cap at once for the process that reads it next', async () => {
    now = T('2028-01-31T15:00:00.000Z');
    const ws = await newWorkspace(a);
    expect(await statuses(a, ws.live, 50)).toEqual(new Array(50).fill(200));
    expectError(await me(a, ws.live), 429, 'quota_exceeded');
    await a.services.billing.setPlan(a.services.uow.as(systemActor('cli')), ws.id, 'pro');
    // The cached cap is re-read after this process's next flush, or one flush interval later.
    now += 600_000;
    expect((await me(a, ws.live)).statusCode).toBe(200);
  });
});

// docs/billing.md#the-free-cap: with Redis the count is shared by every API process, taken atomically
// before the handler; with Redis down each process counts the per-process way again.
const redisUrl = process.env.TEST_REDIS_URL;
describe.skipIf(!redisUrl)('the free cap shared in Redis across API processes, PLAN_LIMITS=on', () => {
  const CAP = 200;
  let storage: Awaited<ReturnType<typeof openTestStorage>>;
  let proxy: CuttableProxy;
  let a: TestApp;
  let b: TestApp;
  let now = T('2028-01-31T15:00:00.000Z');
  const clock = { now: () => now };
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wsvc-plans-'));
    const file = join(dir, 'plans.json');
    const plans = structuredClone(PLANS);
    (plans.plans[0] as { included_requests: number }).included_requests = CAP;
    writeFileSync(file, JSON.stringify(plans));
    storage = await openTestStorage();
    proxy = await startProxy(hostPort(redisUrl as string));
    // Two API processes on one database and one Redis; their meters never flush on their own, so
    // without the shared count each would only see its own requests.
    const config = { PLANS_FILE: file, PLAN_LIMITS: 'on' as const, USAGE_FLUSH_MS: 600_000 };
    const via = viaPort(redisUrl as string, proxy.port);
    a = await startTestApp({ storage, clock, config, redisUrl: via });
    b = await startTestApp({ storage, clock, config, redisUrl: via });
    for (let i = 0; i < 100 && (a.redis?.status !== 'ready' || b.redis?.status !== 'ready'); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await proxy?.close();
    await storage?.close();
  });

  it('lets exactly the cap of live requests through, spread over both processes at once; test keys never counted', async () => {
    const ws = await newWorkspace(a);
    // Which Redis calls take the count: the cap's own call only after a read; else the rate limit's.
    const calls = { own: 0, inRateLimit: 0 };
    // Counted where the app calls the client. ioredis's auto-pipelining copies these methods into the pipeline
    // that sends them and calls them again there (`this` the pipeline): passed through with that `this`, not
    // counted twice. Put back after the test.
    const restore: (() => void)[] = [];
    for (const t of [a, b]) {
      const r = t.redis as unknown as Record<string, (this: unknown, ...args: unknown[]) => Promise<unknown>>;
      for (const [name, counter] of [
        ['wsvcCapTake', 'own'],
        ['wsvcCountEpochAndCap', 'inRateLimit'],
      ] as const) {
        const original = r[name] as NonNullable<(typeof r)[string]>;
        r[name] = function (this: unknown, ...args: unknown[]) {
          if (this === r) calls[counter]++;
          return original.apply(this, args);
        };
        restore.push(() => {
          r[name] = original;
        });
      }
    }
    onTestFinished(() => {
      for (const put of restore) put();
    });
    const live = { ok: 0, refused: 0, other: [] as number[] };
    let testOk = 0;
    // 360 live requests (1 in 12 a billable 404) and 60 test ones, 30 at a time, alternating processes.
    for (let round = 0; round < 14; round++) {
      const batch = await Promise.all(
        Array.from({ length: 30 }, (_, i) => {
          const n = round * 30 + i;
          const t = n % 2 ? a : b;
          if (n % 7 === 0)
            return t.request({ method: 'GET', url: '/v1/users/me', key: ws.test }).then((r) => ['test', r] as const);
          const url = n % 12 === 0 ? '/v1/resources/res_missing' : '/v1/users/me';
          return t.request({ method: 'GET', url, key: ws.live }).then((r) => ['live', r] as const);
        }),
      );
      for (const [kind, r] of batch) {
        if (kind === 'test') testOk += r.statusCode === 200 ? 1 : 0;
        else if (r.statusCode === 200 || r.statusCode === 404) live.ok++;
        else if (r.statusCode === 429 && json(r).error.code === 'quota_exceeded') live.refused++;
        else live.other.push(r.statusCode);
      }
    }
    expect(live.other).toEqual([]);
    expect(live.ok).toBe(CAP);
    expect(live.refused).toBe(14 * 30 - 60 - CAP);
    expect(testOk).toBe(60);
    // After each process's first read (the first batch, all at once), every take rode in the rate limit's call.
    expect(calls.own).toBeLessThanOrEqual(30);
    expect(calls.inRateLimit + calls.own).toBeGreaterThanOrEqual(14 * 30 - 60);
    expect(calls.inRateLimit).toBeGreaterThanOrEqual(14 * 30 - 60 - 30);
    // The shared count and the billed count (once both meters have written) are exactly the cap.
    const key = `${a.config.REDIS_KEY_PREFIX}cap:${ws.id}:${T('2028-01-31T00:00:00.000Z')}`;
    expect(await a.redis?.get(key)).toBe(String(CAP));
    await Promise.all([a.services.usage.meter.flush(), b.services.usage.meter.flush()]);
    expect(await a.services.usage.billableCount(ws.id, T('2028-01-31T00:00:00Z'), T('2028-02-29T00:00:00Z'))).toBe(CAP);
    // A new period starts a new count.
    now = T('2028-02-29T00:00:00.000Z');
    expect((await a.request({ method: 'GET', url: '/v1/users/me', key: ws.live })).statusCode).toBe(200);
    now = T('2028-01-31T15:00:00.000Z');
  });

  it('counts a billable 400 in the shared count, and at the cap refuses before validating the body', async () => {
    const ws = await newWorkspace(a);
    const key = `${a.config.REDIS_KEY_PREFIX}cap:${ws.id}:${T('2028-01-31T00:00:00.000Z')}`;
    const get = (t: TestApp) => t.request({ method: 'GET', url: '/v1/users/me', key: ws.live });
    const bad = (t: TestApp) => t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { nope: 1 } });
    expect((await get(a)).statusCode).toBe(200);
    expect((await get(b)).statusCode).toBe(200);
    expect(await a.redis?.get(key)).toBe('2');
    // Two short of the cap (as if other processes had answered the rest).
    await a.redis?.set(key, String(CAP - 2));
    expectError(await bad(a), 400, 'validation_error');
    expect((await get(b)).statusCode).toBe(200);
    expect(await a.redis?.get(key)).toBe(String(CAP));
    expectError(await bad(b), 429, 'quota_exceeded');
    expectError(await get(a), 429, 'quota_exceeded');
    expect(await a.redis?.get(key)).toBe(String(CAP));
  });

  it('with Redis down each process counts the per-process way (exact in one process), and the shared count resumes from the database when Redis returns', async () => {
    const ws = await newWorkspace(a);
    await proxy.cut();
    const ok = async (t: TestApp, n: number) => {
      let passed = 0;
      for (let i = 0; i < n; i++) {
        const r = await t.request({ method: 'GET', url: '/v1/users/me', key: ws.live });
        if (r.statusCode === 200) passed++;
        else expectError(r, 429, 'quota_exceeded');
      }
      return passed;
    };
    // One process alone: exact.
    expect(await ok(a, CAP + 5)).toBe(CAP);
    await a.services.usage.meter.flush();
    await proxy.restore();
    for (let i = 0; i < 100 && (a.redis?.status !== 'ready' || b.redis?.status !== 'ready'); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    for (let i = 0; i < 100; i++) {
      const r = json(await b.request({ method: 'GET', url: '/readyz' })).redis;
      const s = json(await a.request({ method: 'GET', url: '/readyz' })).redis;
      if (r === 'ok' && s === 'ok') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // The count missed the outage; it is raised to the database's count (what a flushed), so the cap holds.
    now += 600_000;
    expectError(await b.request({ method: 'GET', url: '/v1/users/me', key: ws.live }), 429, 'quota_exceeded');
    expectError(await a.request({ method: 'GET', url: '/v1/users/me', key: ws.live }), 429, 'quota_exceeded');
    now = T('2028-01-31T15:00:00.000Z');
  });
});
