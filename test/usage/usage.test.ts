import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/expect.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — additive upserts from two processes and rollups are SQL
// Tier: quick
// docs/usage.md: every request to a key counted in memory per process, flushed as additive upserts;
// rollups keep totals; /v1/usage isolated by workspace and environment.
describe('usage metering (docs/usage.md)', () => {
  let storage: Awaited<ReturnType<typeof openTestStorage>>;
  let a: TestApp;
  let b: TestApp;
  let now = Date.now();
  const clock = { now: () => now };
  beforeAll(async () => {
    storage = await openTestStorage();
    // Two apps on one database, each with its own meter: two API processes.
    const config = { RATE_LIMIT_TEST: 3, USAGE_FLUSH_MS: 600_000 };
    a = await startTestApp({ storage, clock, config });
    b = await startTestApp({ storage, clock, config });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await storage?.close();
  });
  const flushBoth = () => Promise.all([a.services.usage.meter.flush(), b.services.usage.meter.flush()]);
  const usage = async (t: TestApp, key: string, query: string) => {
    const res = await t.request({ method: 'GET', url: `/v1/usage?${query}`, key });
    expect(res.statusCode, res.body).toBe(200);
    return json(res).data;
  };
  const byGroup = (data: { series: { group: string; total: { count: number } }[] }) =>
    Object.fromEntries(data.series.map((s) => [s.group, s.total.count]));

  it('counts a known mix from two processes exactly, 4xx and 429 included, live and test apart', async () => {
    const ws = await newWorkspace(a);
    const from = new Date(now - 60_000).toISOString();
    const get = (t: TestApp, key: string, url: string) => t.request({ method: 'GET', url, key });
    for (let i = 0; i < 5; i++) await get(a, ws.live, '/v1/resources');
    for (let i = 0; i < 3; i++) await get(b, ws.live, '/v1/resources');
    for (let i = 0; i < 2; i++) await get(b, ws.live, '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R');
    await a.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { nope: 1 } });
    // RATE_LIMIT_TEST is 3 per process: the 4th and 5th are 429.
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await get(a, ws.test, '/v1/resources')).statusCode);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    // Nothing is written before a flush.
    expect(await storage.db.selectFrom('usage_counts').selectAll().execute()).toEqual([]);
    await flushBoth();
    const to = new Date(now + 60_000).toISOString();
    const live = await usage(a, ws.live, `granularity=minute&group_by=status&from=${from}&to=${to}`);
    expect(byGroup(live)).toEqual({ '200': 8, '400': 1, '404': 2 });
    const routes = await usage(b, ws.live, `granularity=hour&group_by=route&from=${from}&to=${to}`);
    expect(byGroup(routes)).toEqual({
      'GET /v1/resources': 8,
      'GET /v1/resources/:id': 2,
      'POST /v1/resources': 1,
    });
    const total = routes.series.reduce((n: number, s: { total: { errors: number } }) => n + s.total.errors, 0);
    expect(total).toBe(3);
    const test = await usage(b, ws.test, `granularity=minute&group_by=status&from=${from}&to=${to}`);
    expect(byGroup(test)).toEqual({ '200': 3, '429': 2 });
    // A live key asking for the test environment sees the test series, never mixed into live.
    expect(byGroup(await usage(a, ws.live, `group_by=status&env=test&from=${from}&to=${to}`))).toEqual({
      '200': 3,
      '429': 2,
    });
    const p = live.series.find((s: { group: string }) => s.group === '200').total;
    expect(p.p50_ms).toBeGreaterThan(0);
    expect(p.p99_ms).toBeGreaterThanOrEqual(p.p50_ms);
    // Another workspace sees none of it.
    const other = await newWorkspace(a);
    expect((await usage(a, other.live, `from=${from}&to=${to}`)).series).toEqual([]);
  });

  it('adds concurrent flushes of two processes into the same rows exactly', async () => {
    const ws = await newWorkspace(a);
    const sample = { workspaceId: ws.id, env: 'live' as const, keyId: 'key_x', route: 'GET /v1/x', status: 200 };
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 100; i++) {
        a.services.usage.meter.record({ ...sample, latencyMs: i % 7 });
        b.services.usage.meter.record({ ...sample, status: i % 2 ? 200 : 500, latencyMs: 1 });
      }
      await flushBoth();
    }
    const rows = await storage.db.selectFrom('usage_counts').selectAll().where('workspace_id', '=', ws.id).execute();
    const sum = (status: number) =>
      rows.filter((r) => Number(r.status) === status).reduce((n, r) => n + Number(r.count), 0);
    expect(sum(200)).toBe(500 + 250);
    expect(sum(500)).toBe(250);
    for (const r of rows) {
      const buckets = Array.from({ length: 16 }, (_, i) => Number(r[`b${i}`]));
      expect(buckets.reduce((x, y) => x + y, 0)).toBe(Number(r.count));
    }
  });

  it("writes keys' last use at minute precision from the flush", async () => {
    const ws = await newWorkspace(a);
    const keys = await storage.db.selectFrom('api_keys').selectAll().where('workspace_id', '=', ws.id).execute();
    const live = keys.find((k) => k.env === 'live');
    await a.request({ method: 'GET', url: '/v1/users/me', key: ws.live });
    const before = await storage.db
      .selectFrom('api_keys')
      .select('last_used_at')
      .where('id', '=', live?.id as string)
      .executeTakeFirst();
    expect(before?.last_used_at).toBeNull();
    await flushBoth();
    const res = await a.request({ method: 'GET', url: `/v1/keys/${live?.id}`, key: ws.live });
    expect(json(res).data.last_used_at).toBe(new Date(now - (now % 60_000)).toISOString());
  });

  it('flushes when the app closes (SIGTERM path)', async () => {
    const c = await startTestApp({ storage, clock, config: { USAGE_FLUSH_MS: 600_000 } });
    const ws = await newWorkspace(c);
    await c.request({ method: 'GET', url: '/v1/resources', key: ws.live });
    await c.close();
    const rows = await storage.db.selectFrom('usage_counts').selectAll().where('workspace_id', '=', ws.id).execute();
    expect(rows.map((r) => Number(r.count))).toEqual([1]);
  });

  it('rolls minutes into hours after 48 h and hours into days after 90 days, totals unchanged', async () => {
    const ws = await newWorkspace(a);
    const saved = now;
    try {
      const t0 = Date.parse('2026-03-10T10:00:00.000Z');
      const rec = (at: number, n: number) => {
        now = at;
        for (let i = 0; i < n; i++)
          a.services.usage.meter.record({
            workspaceId: ws.id,
            env: 'live',
            keyId: 'key_r',
            route: 'GET /v1/r',
            status: 200,
            latencyMs: 2,
          });
      };
      rec(t0 + 5 * 60_000, 3); // 10:05
      rec(t0 + 59 * 60_000 + 59_999, 4); // 10:59
      rec(t0 + 60 * 60_000, 5); // 11:00
      await a.services.usage.meter.flush();
      const q = `granularity=day&from=2026-03-01T00:00:00.000Z&to=2026-03-20T00:00:00.000Z`;
      const grans = async () =>
        (
          await storage.db
            .selectFrom('usage_counts')
            .select(['granularity', 'period_start', 'count'])
            .where('workspace_id', '=', ws.id)
            .orderBy('period_start')
            .execute()
        ).map((r) => `${r.granularity} ${r.period_start} ${Number(r.count)}`);
      // 48 h after 11:00:59.999: the cut is 11:00, so 10:05 and 10:59 roll into 10:00 and 11:00 stays.
      now = t0 + 48 * 3600_000 + 60 * 60_000 + 59_999;
      await a.services.usage.rollup(a.services.uow.as(systemActor('scheduler:usage-rollup')));
      expect(await grans()).toEqual(['hour 2026-03-10T10:00:00.000Z 7', 'minute 2026-03-10T11:00:00.000Z 5']);
      // One millisecond before the next hour's cut: nothing more moves.
      now = t0 + 48 * 3600_000 + 2 * 60 * 60_000 - 1;
      await a.services.usage.rollup(a.services.uow.as(systemActor('scheduler:usage-rollup')));
      expect(await grans()).toHaveLength(2);
      now = t0 + 48 * 3600_000 + 2 * 60 * 60_000;
      await a.services.usage.rollup(a.services.uow.as(systemActor('scheduler:usage-rollup')));
      expect(await grans()).toEqual(['hour 2026-03-10T10:00:00.000Z 7', 'hour 2026-03-10T11:00:00.000Z 5']);
      // After 90 days the hours become one day; after 400 days it is gone.
      now = Date.parse('2026-06-09T00:00:00.000Z'); // 2026-03-10 + 91 days
      await a.services.usage.rollup(a.services.uow.as(systemActor('scheduler:usage-rollup')));
      expect(await grans()).toEqual(['day 2026-03-10T00:00:00.000Z 12']);
      const totals = await usage(a, ws.live, q);
      expect(totals.series[0].total.count).toBe(12);
      now = Date.parse('2027-04-15T00:00:00.000Z');
      await a.services.usage.rollup(a.services.uow.as(systemActor('scheduler:usage-rollup')));
      expect(await grans()).toEqual([]);
    } finally {
      now = saved;
    }
  });

  it('answers 400 for a bad range, too many points, an unknown group or granularity', async () => {
    const ws = await newWorkspace(a);
    const bad = async (query: string) =>
      expectError(await a.request({ method: 'GET', url: `/v1/usage?${query}`, key: ws.live }), 400, 'validation_error');
    await bad('from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z');
    await bad('from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z');
    await bad('granularity=minute&from=2026-01-01T00:00:00Z&to=2026-01-31T00:00:00Z'); // 43,200 points
    await bad('group_by=colour');
    await bad('granularity=week');
    await bad('from=yesterday');
    // 10,000 minutes exactly is allowed.
    const ok = await a.request({
      method: 'GET',
      url: `/v1/usage?granularity=minute&from=2026-01-01T00:00:00.000Z&to=${new Date(Date.parse('2026-01-01T00:00:00Z') + 10_000 * 60_000).toISOString()}`,
      key: ws.live,
    });
    expect(ok.statusCode, ok.body).toBe(200);
  });
});
