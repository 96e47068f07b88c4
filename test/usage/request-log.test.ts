import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { asCli, json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/expect.js';

// Backends: both — the failed-request log is written by the flush and filtered in SQL
// Tier: quick
// docs/usage.md#request-log: every 4xx/5xx answer to a key, kept 7 days, written by the meter's
// flush, never a key, a secret or a header.
describe('failed-request log (docs/usage.md#request-log)', () => {
  let t: TestApp;
  let now = Date.now();
  beforeAll(async () => {
    t = await startTestApp({ clock: { now: () => now }, config: { USAGE_FLUSH_MS: 600_000 } });
  });
  afterAll(() => t?.close());
  const flush = () => t.services.usage.meter.flush();
  const list = async (key: string, query = '') => {
    const res = await t.request({ method: 'GET', url: `/v1/requests?${query}`, key });
    expect(res.statusCode, res.body).toBe(200);
    return json(res);
  };

  it('finds a failed call by its request id, with its error, and no secret anywhere', async () => {
    const ws = await newWorkspace(t);
    const secretKey = 'svc_live_Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9Zx9';
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      headers: { 'x-api-secret': 'header-secret-value' },
      body: {
        name: 'Broken',
        type: 'standard',
        password: 'hunter2hunter2',
        metadata: { note: `my key is ${secretKey}`, hook: 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0' },
      },
    });
    expect(res.statusCode).toBe(400);
    const requestId = String(res.headers['x-request-id']);
    expect((await list(ws.live, `request_id=${requestId}`)).data).toEqual([]); // not before the flush
    await flush();
    const found = await list(ws.live, `request_id=${requestId}`);
    expect(found.data).toHaveLength(1);
    expect(found.data[0]).toMatchObject({
      request_id: requestId,
      method: 'POST',
      route: '/v1/resources',
      path: '/v1/resources',
      status: 400,
      error_code: 'validation_error',
      env: 'live',
    });
    expect(found.data[0].body).toContain('Broken');
    const everything = JSON.stringify(await t.storage.db.selectFrom('request_log').selectAll().execute());
    for (const secret of [ws.live, secretKey, 'hunter2hunter2', 'whsec_c2VjcmV0', 'header-secret-value', 'Bearer']) {
      expect(everything).not.toContain(secret);
    }
  });

  it('keeps a body that is not JSON as received, secrets redacted', async () => {
    const ws = await newWorkspace(t);
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: '{"name":"x","client_secret":"s3cr3t-value", "k":"svc_test_Qw3Qw3Qw3Qw3Qw3Qw3Qw3Qw3"',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.statusCode).toBe(400);
    await flush();
    const [entry] = (await list(ws.live)).data;
    expect(entry.error_code).toBe('invalid_json');
    expect(entry.body).toBe('{"name":"x","client_secret":"[redacted]", "k":"[redacted]"');
  });

  it('keeps a failed request carrying NUL characters, and the flush after it still writes', async () => {
    // PostgreSQL's text cannot hold U+0000: stored as the six characters \u0000 on both databases.
    const ws = await newWorkspace(t);
    const bad = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: '{"name":"a\u0000b"',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.statusCode).toBe(400);
    await t.request({ method: 'GET', url: '/v1/events?resource_id=%00', key: ws.live });
    await flush();
    const logged = (await list(ws.live)).data;
    expect(logged).toHaveLength(2);
    const body = logged.find((e: { body: string | null }) => e.body !== null)?.body;
    expect(body).toBe('{"name":"a\\u0000b"');
    // The next flush is not stuck behind them.
    await t.request({ method: 'GET', url: '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R', key: ws.live });
    await flush();
    expect((await list(ws.live)).data).toHaveLength(3);
  });

  it('filters by status class, status, code, key and route; test and other workspaces apart', async () => {
    const ws = await newWorkspace(t);
    const missing = '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R';
    await t.request({ method: 'GET', url: missing, key: ws.live });
    await t.request({ method: 'GET', url: missing, key: ws.live });
    await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: {} });
    await t.request({ method: 'GET', url: '/v1/resources', key: ws.live }); // 200: not logged
    await t.request({ method: 'GET', url: missing, key: ws.test });
    await flush();
    expect((await list(ws.live)).meta.total).toBe(3);
    expect((await list(ws.live, 'status=4xx')).meta.total).toBe(3);
    expect((await list(ws.live, 'status=5xx')).meta.total).toBe(0);
    expect((await list(ws.live, 'status=404')).meta.total).toBe(2);
    expect((await list(ws.live, 'code=validation_error')).meta.total).toBe(1);
    expect((await list(ws.live, 'route=/v1/resources/:id')).meta.total).toBe(2);
    const page = await list(ws.live, 'limit=2');
    expect(page.data).toHaveLength(2);
    expect(page.data[0].method).toBe('POST'); // newest first
    const rest = await list(ws.live, `limit=2&cursor=${page.meta.next_cursor}`);
    expect(rest.data).toHaveLength(1);
    expect(rest.meta.next_cursor).toBeNull();
    const keyId = page.data[0].key_id;
    expect((await list(ws.live, `key_id=${keyId}`)).meta.total).toBe(3);
    expect((await list(ws.test)).meta.total).toBe(1);
    const other = await newWorkspace(t);
    expect((await list(other.live)).meta.total).toBe(0);
    expectError(
      await t.request({ method: 'GET', url: '/v1/requests?status=2xx', key: ws.live }),
      400,
      'validation_error',
    );
  });

  it("shows members their own keys' failures only; viewers get 403", async () => {
    const ws = await newWorkspace(t);
    const member = await t.services.users.create(asCli(t.services), {
      workspaceId: ws.id,
      email: `m${Date.now()}@example.test`,
      role: 'member',
    });
    const memberKey = await ws.key(member.id, 'live');
    const missing = '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R';
    await t.request({ method: 'GET', url: missing, key: ws.live });
    await t.request({ method: 'GET', url: missing, key: memberKey.key });
    await flush();
    const mine = await list(memberKey.key);
    expect(mine.data.map((r: { key_id: string }) => r.key_id)).toEqual([memberKey.id]);
    expect((await list(ws.live)).meta.total).toBe(2);
    const viewer = await ws.member('viewer');
    expectError(await t.request({ method: 'GET', url: '/v1/requests', key: viewer.live }), 403, 'insufficient_scope');
  });

  it('keeps at most 8 KiB of a body and forgets entries after 7 days', async () => {
    const ws = await newWorkspace(t);
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name: 'x', type: 'standard', metadata: { big: 'y'.repeat(20_000) } },
    });
    expect(res.statusCode).toBe(400);
    await flush();
    const [entry] = (await list(ws.live)).data;
    expect(Buffer.byteLength(entry.body)).toBeLessThanOrEqual(8192);
    expect(Buffer.byteLength(entry.body)).toBeGreaterThan(8000);
    const saved = now;
    try {
      now = saved + 7 * 24 * 3600_000 - 60_000;
      await t.services.usage.rollup(t.services.uow.as(systemActor('scheduler:usage-rollup')));
      expect((await list(ws.live)).meta.total).toBe(1);
      now = saved + 7 * 24 * 3600_000 + 60_000;
      await t.services.usage.rollup(t.services.uow.as(systemActor('scheduler:usage-rollup')));
      expect((await list(ws.live)).meta.total).toBe(0);
    } finally {
      now = saved;
    }
  });
});
