import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError, WorkspaceClient } from '../../packages/client/src/index.js';
import type { Config } from '../../src/config.js';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';
import { testWorker } from '../helpers/worker.js';

// Backends: sqlite — the client package's calls, errors, retries and paging; the server's storage rules behind them run on both backends in test/api, test/idempotency and test/resources
// Tier: quick
// The client of packages/client (docs/client.md) against the real server listening on loopback,
// on this run's database: every operation of the OpenAPI document once, the errors, the
// Idempotency-Key, retries after a dropped connection and after a real 429, and paging.
const FAST: Partial<Config> = {
  WEBHOOK_ALLOW_INSECURE_URLS: true,
  WEBHOOK_RETRY_BASE_MS: 10,
  WEBHOOK_RETRY_FACTOR: 1,
  WEBHOOK_MAX_RETRIES: 1,
  WEBHOOK_TIMEOUT_MS: 2000,
  WEBHOOK_POLL_MS: 20,
};

let t: TestApp;
let rx: Receiver;
let worker: DeliveryWorker;
let baseUrl: string;
beforeAll(async () => {
  t = await startTestApp({ config: FAST });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  rx = await startReceiver((r) => (r.path.startsWith('/fail') ? { status: 500 } : { status: 200 }));
  worker = testWorker(t);
  worker.start();
});
afterAll(async () => {
  await worker.stop(1000);
  await rx.close();
  await t.close();
});

/** A client that records the operations it called (method and path template). */
function clientFor(ws: TestWorkspace, seen = new Set<string>()) {
  const client = new WorkspaceClient({ key: ws.live, baseUrl });
  client.raw.use({ onRequest: ({ request, schemaPath }) => void seen.add(`${request.method} ${schemaPath}`) });
  return client;
}

describe('every operation through the client', () => {
  it('calls each of the 42 operations of the served document once, typed end to end', async () => {
    const ws = await newWorkspace(t);
    const seen = new Set<string>();
    const c = clientFor(ws, seen);

    const me = (await c.GET('/v1/users/me')).data;
    expect(me.id).toBe(ws.adminId);
    expect((await c.PATCH('/v1/users/me', { body: { name: 'Ada' } })).data.name).toBe('Ada');
    expect((await c.GET('/v1/users')).data.map((u) => u.id)).toContain(ws.adminId);

    const r = (await c.POST('/v1/resources', { body: { name: 'Doc', type: 'standard', metadata: { a: 'b' } } })).data;
    const path = { params: { path: { id: r.id } } };
    expect((await c.GET('/v1/resources/{id}', path)).data.name).toBe('Doc');
    expect((await c.PUT('/v1/resources/{id}', { ...path, body: { name: 'Doc 2' } })).data.name).toBe('Doc 2');
    expect((await c.POST('/v1/resources/{id}/archive', path)).data.status).toBe('archived');
    expect((await c.POST('/v1/resources/{id}/unarchive', path)).data.status).toBe('active');
    expect((await c.GET('/v1/resources', { params: { query: { limit: 5 } } })).meta.total).toBe(1);

    const events = (await c.GET('/v1/events', { params: { query: { resource_id: r.id } } })).data;
    expect(events.map((e) => e.event)).toContain('resource.created');
    const first = events[0];
    if (!first) throw new Error('no event');
    expect((await c.GET('/v1/events/{id}', { params: { path: { id: first.id } } })).data.id).toBe(first.id);

    const key = (await c.POST('/v1/keys', { body: { name: 'CI', env: 'live', scopes: ['resources:read'] } })).data;
    expect(key.key).toMatch(/^svc_live_/);
    const keyPath = { params: { path: { id: key.id } } };
    expect((await c.GET('/v1/keys')).data.map((k) => k.id)).toContain(key.id);
    expect((await c.GET('/v1/keys/{id}', keyPath)).data.name).toBe('CI');
    // The documented call without a body: the schema marks it optional.
    const rolled = (await c.POST('/v1/keys/{id}/roll', keyPath)).data;
    expect(rolled.key).toMatch(/^svc_live_/);
    expect(await c.DELETE('/v1/keys/{id}', { params: { path: { id: rolled.id } } })).toBeUndefined();

    const hook = (await c.POST('/v1/webhooks', { body: { url: rx.url('/fail/1'), events: ['*'] } })).data;
    const hookPath = { params: { path: { id: hook.id } } };
    expect((await c.GET('/v1/webhooks')).data.map((h) => h.id)).toEqual([hook.id]);
    expect((await c.GET('/v1/webhooks/{id}', hookPath)).data.url).toBe(rx.url('/fail/1'));
    expect((await c.PATCH('/v1/webhooks/{id}', { ...hookPath, body: { label: 'CRM' } })).data.label).toBe('CRM');
    const test = (await c.POST('/v1/webhooks/{id}/test', hookPath)).data;
    expect(test.event).toBe('webhook.test');
    // The receiver answers 500: the delivery fails after its retry.
    const failed = await eventually(async () => {
      const list = (
        await c.GET('/v1/webhooks/{id}/deliveries', {
          ...hookPath,
          params: { ...hookPath.params, query: { status: 'failed' } },
        })
      ).data;
      return list[0];
    });
    const deliveryPath = { params: { path: { id: hook.id, delivery_id: failed.id } } };
    expect((await c.GET('/v1/webhooks/{id}/deliveries/{delivery_id}', deliveryPath)).data.attempts.length).toBe(2);
    expect((await c.POST('/v1/webhooks/{id}/deliveries/{delivery_id}/retry', deliveryPath)).data.id).toBe(failed.id);
    await eventually(
      async () => (await c.GET('/v1/webhooks/{id}/deliveries/{delivery_id}', deliveryPath)).data.status === 'failed',
    );
    const bulk = await c.POST('/v1/webhooks/{id}/deliveries/retry', {
      ...hookPath,
      body: { since: new Date(Date.now() - 3600_000).toISOString() },
    });
    expect(bulk.data).toBeDefined();
    expect((await c.POST('/v1/webhooks/{id}/disable', hookPath)).data.status).toBe('disabled');
    expect((await c.POST('/v1/webhooks/{id}/enable', hookPath)).data.status).toBe('enabled');
    const rotated = (await c.POST('/v1/webhooks/{id}/rotate-secret', hookPath)).data;
    expect(rotated.secret).not.toBe(hook.secret);
    expect((await c.GET('/v1/deliveries', { params: { query: { webhook_id: hook.id } } })).data.length).toBeGreaterThan(
      0,
    );
    expect((await c.GET('/v1/deliveries/summary', { params: { query: { window: '24h' } } })).data).toBeDefined();
    expect(await c.DELETE('/v1/webhooks/{id}', hookPath)).toBeUndefined();

    // A failed call, then usage and the failed-request log once the meter has flushed.
    const missing = { params: { path: { id: 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R' } } };
    const notFound = await c.GET('/v1/resources/{id}', missing).catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(ApiError);
    await t.services.usage.meter.flush();
    const usage = (await c.GET('/v1/usage', { params: { query: { granularity: 'hour', group_by: 'status' } } })).data;
    expect(usage.series.map((s) => s.group)).toContain('404');
    const failures = (await c.GET('/v1/requests', { params: { query: { status: '404' } } })).data;
    expect(failures.map((f) => f.request_id)).toContain((notFound as ApiError).requestId);
    expect(await c.DELETE('/v1/resources/{id}', path)).toBeUndefined();

    const sub = (await c.GET('/v1/billing/subscription')).data;
    expect(sub.plan.id).toBe('free');
    expect(sub.usage.billable_requests).toBeGreaterThan(0);
    expect((await c.GET('/v1/billing/invoices', { params: { query: { limit: 5 } } })).meta.total).toBe(0);

    const audit = await c.GET('/v1/audit-log', { params: { query: { action: 'resource.', limit: 100 } } });
    expect(audit.data.map((e) => e.action)).toContain('resource.deleted');
    expect(audit.data.every((e) => e.action.startsWith('resource.'))).toBe(true);

    const exp = (await c.POST('/v1/exports')).data;
    expect(exp.status).toBe('queued');
    const expPath = { params: { path: { id: exp.id } } };
    expect((await c.GET('/v1/exports/{id}', expPath)).data.id).toBe(exp.id);
    expect((await c.GET('/v1/exports', { params: { query: { limit: 5 } } })).data.map((e) => e.id)).toEqual([exp.id]);
    // Not written yet (no worker here): 409 export_not_ready, an ApiError like any other.
    const early = (await c.GET('/v1/exports/{id}/download', expPath).catch((e: unknown) => e)) as ApiError;
    expect([early.status, early.code]).toEqual([409, 'export_not_ready']);
    // Last: from here on the workspace's keys answer 401 workspace_deleted (docs/data-lifecycle.md).
    const deletion = (await c.DELETE('/v1/workspace', { body: { confirm: 'Test workspace' } })).data;
    expect(deletion.workspace_id).toBe(ws.id);
    expect(deletion.delete_at).not.toBeNull();

    const doc = (await (await fetch(`${baseUrl}/v1/openapi.json`)).json()) as { paths: Record<string, object> };
    const all = Object.entries(doc.paths).flatMap(([p, item]) =>
      Object.keys(item)
        .filter((m) => ['get', 'put', 'post', 'patch', 'delete'].includes(m))
        .map((m) => `${m.toUpperCase()} ${p}`),
    );
    expect(all.length).toBe(42);
    expect([...seen].sort()).toEqual(all.sort());
  });
});

describe('errors', () => {
  it('a non-2xx answer is an ApiError with the error body: status, code, message, request_id, details', async () => {
    const ws = await newWorkspace(t);
    const c = clientFor(ws);
    const missing = await c
      .GET('/v1/resources/{id}', { params: { path: { id: 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R' } } })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ApiError);
    const e = missing as ApiError;
    expect([e.status, e.code]).toEqual([404, 'not_found']);
    expect(e.requestId).toMatch(/^req_/);
    expect(e.requestId).toBe(e.headers.get('x-request-id'));
    const invalid = (await c
      .POST('/v1/resources', { body: { name: '', type: 'standard' } })
      .catch((x: unknown) => x)) as ApiError;
    expect([invalid.status, invalid.code]).toEqual([400, 'validation_error']);
    expect(invalid.details?.map((d) => d.field)).toContain('name');
    const bad = new WorkspaceClient({ key: `svc_live_${'x'.repeat(43)}`, baseUrl });
    const unauth = (await bad.GET('/v1/users/me').catch((x: unknown) => x)) as ApiError;
    expect([unauth.status, unauth.code]).toEqual([401, 'invalid_token']);
    expect(unauth.message).toContain('invalid_token');
  });
});

describe('Idempotency-Key', () => {
  it('every POST carries one; a POST whose connection dropped before the answer is sent again with the same key and done once', async () => {
    const ws = await newWorkspace(t);
    const keys: (string | null)[] = [];
    const replayed: (string | null)[] = [];
    // A real TCP proxy in front of the server that drops the first connection as soon as the
    // server starts answering: the request was done, the caller never hears of it.
    let drops = 1;
    const target = t.app.server.address() as AddressInfo;
    const proxy = net.createServer((client) => {
      const upstream = net.connect(target.port, '127.0.0.1');
      const drop = drops-- > 0;
      client.on('error', () => {});
      upstream.on('error', () => {});
      client.pipe(upstream);
      upstream.on('data', (chunk) => (drop ? client.destroy() : client.write(chunk)));
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const c = new WorkspaceClient({
      key: ws.live,
      baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      sleep: async () => {},
      fetch: async (request) => {
        keys.push(request.headers.get('idempotency-key'));
        const res = await fetch(request);
        replayed.push(res.headers.get('idempotent-replayed'));
        return res;
      },
    });
    const created = await c.POST('/v1/resources', { body: { name: 'Once', type: 'standard' } });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    // The first attempt was done by the server: the answer heard is the stored one, replayed.
    expect(replayed[0]).toBe('true');
    const all = await c.GET('/v1/resources');
    expect(all.data.map((r) => r.id)).toEqual([created.data.id]);

    // A caller's own key is kept.
    await c.POST('/v1/resources', {
      body: { name: 'Mine', type: 'standard' },
      headers: { 'Idempotency-Key': 'order-42' },
    });
    expect(keys.at(-1)).toBe('order-42');
    const again = await c.raw.POST('/v1/resources', {
      body: { name: 'Mine', type: 'standard' },
      headers: { 'Idempotency-Key': 'order-42' },
    });
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect((await c.GET('/v1/resources')).meta.total).toBe(2);
    proxy.close();
  });

  it('a PATCH whose connection dropped is not sent again', async () => {
    const ws = await newWorkspace(t);
    let calls = 0;
    const c = new WorkspaceClient({
      key: ws.live,
      baseUrl,
      sleep: async () => {},
      fetch: async () => {
        calls++;
        throw new TypeError('fetch failed');
      },
    });
    await expect(c.PATCH('/v1/users/me', { body: { name: 'x' } })).rejects.toThrow(TypeError);
    expect(calls).toBe(1);
  });
});

describe('retries on 429 with Retry-After', () => {
  let small: TestApp;
  let smallUrl: string;
  beforeAll(async () => {
    small = await startTestApp({ config: { RATE_LIMIT_LIVE: 2, RATE_LIMIT_WINDOW_S: 1 } });
    await small.app.listen({ port: 0, host: '127.0.0.1' });
    smallUrl = `http://127.0.0.1:${(small.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => small.close());

  it('waits what the real 429 says, then succeeds; with retries 0 the 429 is an ApiError', async () => {
    const ws = await newWorkspace(small);
    const statuses: number[] = [];
    const waits: number[] = [];
    const c = new WorkspaceClient({
      key: ws.live,
      baseUrl: smallUrl,
      retries: 3,
      // The fixed window of the server is real time: the wait the client asks for is really waited.
      sleep: (ms) => {
        waits.push(ms);
        return new Promise((r) => setTimeout(r, ms));
      },
      fetch: async (request) => {
        const res = await fetch(request);
        statuses.push(res.status);
        return res;
      },
    });
    const off = new WorkspaceClient({ key: ws.live, baseUrl: smallUrl, retries: 0 });
    await c.GET('/v1/users/me');
    await c.GET('/v1/users/me');
    const limited = (await off.GET('/v1/users/me').catch((e: unknown) => e)) as ApiError;
    expect([limited.status, limited.code]).toEqual([429, 'rate_limited']);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(1);

    expect((await c.GET('/v1/users/me')).data.id).toBe(ws.adminId);
    expect(statuses.slice(0, 2)).toEqual([200, 200]);
    expect(statuses.at(-1)).toBe(200);
    expect(statuses).toContain(429);
    expect(waits.length).toBe(statuses.filter((s) => s === 429).length);
    for (const w of waits) expect(w).toBe(1000);
  });
});

describe('retries on 503', () => {
  it('a 503 is retried after its Retry-After; one over maxRetryDelayMs is not waited for; retries 0 stops at once', async () => {
    const ws = await newWorkspace(t);
    const waits: number[] = [];
    let unavailable = 1;
    let retryAfter = '2';
    let sent = 0;
    const c = (opts: { retries?: number; maxRetryDelayMs?: number } = {}) =>
      new WorkspaceClient({
        key: ws.live,
        baseUrl,
        ...opts,
        sleep: async (ms) => void waits.push(ms),
        // The server's own 503 (a database outage) is covered by its tests; here one is put in front.
        fetch: async (request) => {
          sent++;
          if (unavailable-- > 0) {
            const body = { error: { code: 'service_unavailable', message: 'Busy.', request_id: 'req_x' } };
            return new Response(JSON.stringify(body), {
              status: 503,
              headers: { 'content-type': 'application/json', 'retry-after': retryAfter },
            });
          }
          return fetch(request);
        },
      });
    expect((await c().GET('/v1/users/me')).data.id).toBe(ws.adminId);
    expect([sent, waits]).toEqual([2, [2000]]);
    [unavailable, retryAfter, sent] = [1, '120', 0];
    const tooLong = (await c()
      .GET('/v1/users/me')
      .catch((e: unknown) => e)) as ApiError;
    expect([tooLong.status, tooLong.code, sent]).toEqual([503, 'service_unavailable', 1]);
    [unavailable, retryAfter, sent] = [1, '1', 0];
    const off = (await c({ retries: 0 })
      .GET('/v1/users/me')
      .catch((e: unknown) => e)) as ApiError;
    expect([off.status, sent]).toEqual([503, 1]);
    expect(waits).toEqual([2000]);
  });
});

describe('paging', () => {
  it('for await walks every page by cursor, in order, fetching pages as the loop asks', async () => {
    const ws = await newWorkspace(t);
    const pages: string[] = [];
    const c = new WorkspaceClient({
      key: ws.live,
      baseUrl,
      fetch: (request) => {
        pages.push(new URL(request.url).search);
        return fetch(request);
      },
    });
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      made.push(
        (await c.POST('/v1/resources', { body: { name: `R${i}`, type: i % 2 ? 'premium' : 'standard' } })).data.id,
      );
    }
    pages.length = 0;
    const seen: string[] = [];
    for await (const r of c.resources.list({ limit: 3 })) seen.push(r.id);
    expect(seen).toEqual(made);
    expect(pages).toHaveLength(3);
    expect(pages[1]).toMatch(/cursor=/);
    const premium: string[] = [];
    for await (const r of c.list('/v1/resources', { params: { query: { type: 'premium', limit: 2 } } })) {
      premium.push(r.name);
    }
    expect(premium).toEqual(['R1', 'R3', 'R5']);
    // Stopping early fetches no further page.
    pages.length = 0;
    for await (const _ of c.resources.list({ limit: 2 })) break;
    expect(pages).toHaveLength(1);
  });
});
