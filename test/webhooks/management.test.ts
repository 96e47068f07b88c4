import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Config } from '../../src/config.js';
import { RESOURCE_EVENT_TYPES } from '../../src/kernel/event-types.js';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import { type Received, type Receiver, startReceiver } from '../helpers/receiver.js';
import { expectNoChange } from '../helpers/snapshot.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — endpoints, the delivery log, bulk retry and summaries are SQL
// Tier: quick
// Managing endpoints without losing them: PATCH, enable/disable, rotate-secret, test events, the
// environment-wide delivery log and bulk retry, against a real receiver and the real worker. The
// worker runs only when a test calls runOnce(), on an injected clock, so retries are due exactly
// when the test moves time on.
const CONFIG: Partial<Config> = {
  WEBHOOK_ALLOW_INSECURE_URLS: true,
  WEBHOOK_MAX_RETRIES: 1,
  WEBHOOK_RETRY_BASE_MS: 60_000,
  WEBHOOK_TIMEOUT_MS: 2000,
};

let offsetMs = 0;
const clock = { now: () => Date.now() + offsetMs };
const logged: { obj: Record<string, unknown>; msg: string }[] = [];
let t: TestApp;
let rx: Receiver;
let worker: DeliveryWorker;
beforeAll(async () => {
  t = await startTestApp({ config: CONFIG, clock });
  rx = await startReceiver();
  const log = {
    info: (obj: object, msg: string) => logged.push({ obj: obj as Record<string, unknown>, msg }),
    warn() {},
  };
  worker = testWorker(t, { clock, listen: false, log });
});
afterAll(async () => {
  await worker.stop(1000);
  await rx.close();
  await t.close();
});

let n = 0;
// The resource events by default: these tests count resource deliveries, and `*` would add the platform events
// their failures cause (delivery.exhausted, docs/api.md#platform-events).
async function hook(ws: TestWorkspace, events: string[] = [...RESOURCE_EVENT_TYPES], key = ws.live) {
  const path = `/m${++n}`;
  const res = await t.request({ method: 'POST', url: '/v1/webhooks', key, body: { url: rx.url(path), events } });
  expect(res.statusCode, res.body).toBe(201);
  return { ...(json(res).data as { id: string; secret: string; updated_at: string }), path };
}
async function resource(key: string) {
  const res = await t.request({ method: 'POST', url: '/v1/resources', key, body: { name: 'R', type: 'standard' } });
  expect(res.statusCode, res.body).toBe(201);
  return json(res).data.id as string;
}
const post = (key: string, url: string, body?: unknown) => t.request({ method: 'POST', url, key, body });
const get = async (key: string, url: string) => {
  const res = await t.request({ method: 'GET', url, key });
  expect(res.statusCode, res.body).toBe(200);
  return json(res);
};

/** Verifies Standard Webhooks headers as a receiver whose clock agrees with the server's (injected) one. */
function verify(secret: string, r: Received): unknown {
  vi.useFakeTimers({ toFake: ['Date'], now: clock.now() });
  try {
    return new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
  } finally {
    vi.useRealTimers();
  }
}

describe('PATCH /v1/webhooks/{id}', () => {
  it('changes url, events and label; the secret and the delivery log stay', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['resource.created']);
    await resource(ws.live);
    await worker.runOnce();
    expect(rx.to(h.path)).toHaveLength(1);

    offsetMs += 1000;
    const newPath = `/m${++n}-moved`;
    const res = await t.request({
      method: 'PATCH',
      url: `/v1/webhooks/${h.id}`,
      key: ws.live,
      body: { url: rx.url(newPath), events: ['resource.created', 'resource.deleted'], label: 'Moved' },
    });
    expect(res.statusCode, res.body).toBe(200);
    const patched = json(res).data;
    expect(patched).toMatchObject({
      id: h.id,
      url: rx.url(newPath),
      events: ['resource.created', 'resource.deleted'],
      label: 'Moved',
      status: 'enabled',
    });
    expect(patched.updated_at > h.updated_at).toBe(true);
    expect(JSON.stringify(patched)).not.toContain('whsec_');
    expect(await get(ws.live, `/v1/webhooks/${h.id}`)).toEqual({ data: patched });

    await resource(ws.live);
    await worker.runOnce();
    const moved = rx.to(newPath);
    expect(moved).toHaveLength(1);
    expect(verify(h.secret, moved[0] as Received)).toMatchObject({ event: 'resource.created' });
    const log = await get(ws.live, `/v1/webhooks/${h.id}/deliveries`);
    expect(log.meta.total).toBe(2);

    const cleared = await t.request({
      method: 'PATCH',
      url: `/v1/webhooks/${h.id}`,
      key: ws.live,
      body: { label: null },
    });
    expect(json(cleared).data.label).toBeNull();
  });

  it('{} and unchanged values change nothing, not even updated_at', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['*']);
    offsetMs += 1000;
    const before = await get(ws.live, `/v1/webhooks/${h.id}`);
    for (const body of [{}, { events: ['*'] }, { url: rx.url(h.path), label: null }]) {
      const res = await expectNoChange(t, () =>
        t.request({ method: 'PATCH', url: `/v1/webhooks/${h.id}`, key: ws.live, body }),
      );
      expect(res.statusCode, res.body).toBe(200);
      expect(json(res)).toEqual(before);
    }
  });

  const bad: [string, unknown, { field: string; issue?: string }][] = [
    ['url not a string', { url: 42 }, { field: 'url' }],
    ['url empty', { url: '' }, { field: 'url' }],
    ['url not a URL', { url: 'not a url' }, { field: 'url', issue: 'invalid_url' }],
    ['url too long', { url: `http://127.0.0.1/${'a'.repeat(2048)}` }, { field: 'url' }],
    ['url with credentials', { url: 'http://u:p@127.0.0.1/x' }, { field: 'url', issue: 'credentials_not_allowed' }],
    ['empty events', { events: [] }, { field: 'events' }],
    ['unknown event type', { events: ['resource.exploded'] }, { field: 'events.0' }],
    ['webhook.test is not subscribable', { events: ['webhook.test'] }, { field: 'events.0' }],
    ['duplicate events', { events: ['*', '*'] }, { field: 'events' }],
    ['label too long', { label: 'x'.repeat(256) }, { field: 'label' }],
    ['secret is read-only', { secret: 'whsec_AAAA' }, { field: 'secret' }],
    ['status is read-only', { status: 'disabled' }, { field: 'status' }],
    ['unknown field', { colour: 'red' }, { field: 'colour' }],
  ];
  for (const [name, body, problem] of bad) {
    it(`${name}: 400 validation_error, nothing changed`, async () => {
      const ws = await newWorkspace(t);
      const h = await hook(ws);
      const res = await expectNoChange(t, () =>
        t.request({ method: 'PATCH', url: `/v1/webhooks/${h.id}`, key: ws.live, body }),
      );
      expectValidation(res, problem);
    });
  }

  it('an unknown or malformed id is a 404', async () => {
    const ws = await newWorkspace(t);
    for (const id of ['wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R', 'nope']) {
      const res = await t.request({ method: 'PATCH', url: `/v1/webhooks/${id}`, key: ws.live, body: { label: 'x' } });
      expectError(res, 404, 'not_found');
    }
  });
});

describe('PATCH with the webhook URL guard on', () => {
  let strict: TestApp;
  beforeAll(async () => {
    strict = await startTestApp({
      resolveHost: async (host) => {
        if (host.endsWith('.public.test')) return ['93.184.216.34'];
        throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
      },
    });
  });
  afterAll(() => strict.close());

  it.each([
    ['http://hooks.public.test/x', 'insecure_scheme'],
    ['https://127.0.0.1/x', 'forbidden_address'],
    ['https://169.254.169.254/latest', 'forbidden_address'],
    ['https://nowhere.test/x', 'unresolvable_host'],
  ])('url %s: 400 %s, nothing changed', async (url, issue) => {
    const ws = await newWorkspace(strict);
    const created = await strict.request({
      method: 'POST',
      url: '/v1/webhooks',
      key: ws.live,
      body: { url: 'https://hooks.public.test/in', events: ['*'] },
    });
    const id = json(created).data.id;
    const res = await expectNoChange(strict, () =>
      strict.request({ method: 'PATCH', url: `/v1/webhooks/${id}`, key: ws.live, body: { url } }),
    );
    expectValidation(res, { field: 'url', issue });
  });
});

describe('disable and enable', () => {
  it('disabling cancels pending deliveries and retries; events meanwhile are not queued; enabling resumes', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    rx.plan(h.path, [{ status: 500, body: 'down' }]);
    await resource(ws.live);
    await worker.runOnce(); // attempt 1 fails: a retry is pending
    await resource(ws.live); // a second delivery, never attempted
    const pending = await get(ws.live, `/v1/deliveries?webhook_id=${h.id}&status=pending`);
    expect(pending.meta.total).toBe(2);

    const res = await post(ws.live, `/v1/webhooks/${h.id}/disable`);
    expect(res.statusCode, res.body).toBe(200);
    expect(json(res).data).toMatchObject({ status: 'disabled', disabled_reason: 'manual' });
    const cancelled = await get(ws.live, `/v1/deliveries?webhook_id=${h.id}&status=cancelled`);
    expect(cancelled.meta.total).toBe(2);
    expect(cancelled.data.every((d: { next_attempt_at: unknown }) => d.next_attempt_at === null)).toBe(true);

    // Repeating changes nothing; a disabled endpoint gets no new deliveries, even when retries fall due.
    const again = await expectNoChange(t, () => post(ws.live, `/v1/webhooks/${h.id}/disable`));
    expect(again.statusCode).toBe(200);
    await resource(ws.live);
    offsetMs += 10 * 60_000;
    const before = rx.to(h.path).length;
    await worker.runOnce();
    expect(rx.to(h.path).length).toBe(before);
    expect((await get(ws.live, `/v1/deliveries?webhook_id=${h.id}`)).meta.total).toBe(2);
    for (const url of [`/v1/webhooks/${h.id}/test`, `/v1/webhooks/${h.id}/deliveries/${cancelled.data[0].id}/retry`]) {
      expectError(await expectNoChange(t, () => post(ws.live, url)), 409, 'webhook_disabled');
    }

    rx.plan(h.path, [{ status: 204 }]);
    const enabled = await post(ws.live, `/v1/webhooks/${h.id}/enable`);
    expect(json(enabled).data).toMatchObject({ status: 'enabled', disabled_reason: null });
    await resource(ws.live);
    await worker.runOnce();
    expect(rx.to(h.path).length).toBe(before + 1);
    expect((await get(ws.live, `/v1/deliveries?webhook_id=${h.id}&status=cancelled`)).meta.total).toBe(2);
    expect((await get(ws.live, `/v1/webhooks?limit=100`)).data.find((w: { id: string }) => w.id === h.id).status).toBe(
      'enabled',
    );
  });

  it('a delivery queued for an endpoint disabled before its attempt is cancelled by the worker, not sent', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    await resource(ws.live);
    // As if a concurrent write had queued it after the disable's cancellation ran.
    await t.storage.db.updateTable('webhooks').set({ status: 'disabled' }).where('id', '=', h.id).execute();
    await worker.runOnce();
    expect(rx.to(h.path)).toHaveLength(0);
    const [d] = (await get(ws.live, `/v1/deliveries?webhook_id=${h.id}`)).data;
    expect(d).toMatchObject({ status: 'cancelled', attempt_count: 0 });
  });
});

describe('POST /v1/webhooks/{id}/rotate-secret', () => {
  it('returns the new secret once; during the overlap both secrets sign, then only the new one', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    const res = await post(ws.live, `/v1/webhooks/${h.id}/rotate-secret`, { expire_old_in_s: 3600 });
    expect(res.statusCode, res.body).toBe(200);
    const rotated = json(res).data;
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.secret).not.toBe(h.secret);
    expect(Date.parse(rotated.previous_secret_expires_at) - clock.now()).toBeGreaterThan(3590_000);
    const shown = await get(ws.live, `/v1/webhooks/${h.id}`);
    expect(JSON.stringify(shown)).not.toContain('whsec_');
    expect(shown.data.previous_secret_expires_at).toBe(rotated.previous_secret_expires_at);

    await resource(ws.live);
    await worker.runOnce();
    const during = rx.to(h.path).at(-1) as Received;
    const signatures = String(during.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    expect(verify(rotated.secret, during)).toMatchObject({ event: 'resource.created' });
    expect(verify(h.secret, during)).toMatchObject({ event: 'resource.created' });
    // One value only: keyed with the old secret until it expires (test/webhooks/rotation.test.ts: the exact moment).
    const hex = createHmac('sha256', h.secret).update(during.body).digest('hex');
    expect(during.headers['x-service-signature']).toBe(hex);

    offsetMs += 3601_000;
    expect((await get(ws.live, `/v1/webhooks/${h.id}`)).data.previous_secret_expires_at).toBeNull();
    await resource(ws.live);
    await worker.runOnce();
    const after = rx.to(h.path).at(-1) as Received;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verify(rotated.secret, after)).toMatchObject({ event: 'resource.created' });
    expect(() => verify(h.secret, after)).toThrow();
    expect(after.headers['x-service-signature']).toBe(
      createHmac('sha256', rotated.secret).update(after.body).digest('hex'),
    );
  });

  it('expire_old_in_s 0 stops the old secret at once; no body means one day', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    const now = await post(ws.live, `/v1/webhooks/${h.id}/rotate-secret`, { expire_old_in_s: 0 });
    expect(json(now).data.previous_secret_expires_at).toBeNull();
    await resource(ws.live);
    await worker.runOnce();
    const got = rx.to(h.path).at(-1) as Received;
    expect(String(got.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => verify(h.secret, got)).toThrow();
    expect(verify(json(now).data.secret, got)).toBeTruthy();

    const day = await post(ws.live, `/v1/webhooks/${h.id}/rotate-secret`);
    expect(day.statusCode, day.body).toBe(200);
    const left = Date.parse(json(day).data.previous_secret_expires_at) - clock.now();
    expect(left).toBeGreaterThan(86_390_000);
    expect(left).toBeLessThanOrEqual(86_400_000);
  });

  const bad: [string, unknown, string][] = [
    ['negative', { expire_old_in_s: -1 }, 'expire_old_in_s'],
    ['over 7 days', { expire_old_in_s: 604_801 }, 'expire_old_in_s'],
    ['not an integer', { expire_old_in_s: 1.5 }, 'expire_old_in_s'],
    ['a string', { expire_old_in_s: '60' }, 'expire_old_in_s'],
    ['unknown field', { secret: 'whsec_mine' }, 'secret'],
  ];
  for (const [name, body, field] of bad) {
    it(`${name}: 400 validation_error, the secret unchanged`, async () => {
      const ws = await newWorkspace(t);
      const h = await hook(ws);
      const res = await expectNoChange(t, () => post(ws.live, `/v1/webhooks/${h.id}/rotate-secret`, body));
      expectValidation(res, { field });
    });
  }
});

describe('POST /v1/webhooks/{id}/test', () => {
  it('delivers a webhook.test event to that endpoint only ("*" does not include it)', async () => {
    const ws = await newWorkspace(t);
    const target = await hook(ws, ['resource.created']);
    const other = await hook(ws, ['*']);
    const res = await post(ws.live, `/v1/webhooks/${target.id}/test`);
    expect(res.statusCode, res.body).toBe(202);
    const queued = json(res).data;
    expect(queued).toMatchObject({ webhook_id: target.id, event: 'webhook.test', status: 'pending', attempt_count: 0 });
    await worker.runOnce();
    expect(rx.to(other.path)).toHaveLength(0);
    const [got] = rx.to(target.path);
    const body = verify(target.secret, got as Received) as { id: string; event: string; data: unknown };
    expect(body).toMatchObject({ id: queued.event_id, event: 'webhook.test', data: { webhook_id: target.id } });
    const detail = await get(ws.live, `/v1/webhooks/${target.id}/deliveries/${queued.id}`);
    expect(detail.data).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    const events = await get(ws.live, '/v1/events?event=webhook.test');
    expect(events.data.map((e: { id: string }) => e.id)).toEqual([queued.event_id]);
  });
});

describe('GET /v1/deliveries', () => {
  it('lists deliveries across endpoints of the environment, with filters and paging', async () => {
    const ws = await newWorkspace(t);
    const a = await hook(ws, ['resource.created']);
    const b = await hook(ws, ['*']);
    const testHook = await hook(ws, ['*'], ws.test);
    rx.plan(b.path, [{ status: 500 }]);
    const t0 = new Date(clock.now() - 1).toISOString();
    const res1 = await resource(ws.live);
    offsetMs += 1000;
    const t1 = new Date(clock.now()).toISOString();
    offsetMs += 1000;
    expect((await t.request({ method: 'DELETE', url: `/v1/resources/${res1}`, key: ws.live })).statusCode).toBe(204);
    await resource(ws.test);
    await worker.runOnce();

    const all = await get(ws.live, '/v1/deliveries');
    // docs/api.md#resources: deleting the resource purged its earlier deliveries; resource.deleted went to b only.
    expect(all.data.map((d: { webhook_id: string; event: string }) => [d.webhook_id, d.event])).toEqual([
      [b.id, 'resource.deleted'],
    ]);
    await resource(ws.live);
    await worker.runOnce();
    const everything = await get(ws.live, '/v1/deliveries?limit=100');
    expect(everything.meta.total).toBe(3);
    expect(everything.data.every((d: { webhook_id: string }) => d.webhook_id !== testHook.id)).toBe(true);
    const ids = everything.data.map((d: { id: string }) => d.id);
    expect([...ids].sort()).toEqual(ids);

    expect((await get(ws.live, `/v1/deliveries?webhook_id=${a.id}`)).meta.total).toBe(1);
    expect((await get(ws.live, '/v1/deliveries?event=resource.deleted')).meta.total).toBe(1);
    expect(
      (await get(ws.live, '/v1/deliveries?status=succeeded')).data.map((d: { webhook_id: string }) => d.webhook_id),
    ).toEqual([a.id]);
    expect((await get(ws.live, `/v1/deliveries?status=pending&webhook_id=${b.id}`)).meta.total).toBe(2);
    expect((await get(ws.live, `/v1/deliveries?created_after=${t1}`)).meta.total).toBe(3);
    expect((await get(ws.live, `/v1/deliveries?created_before=${t1}`)).meta.total).toBe(0);
    expect((await get(ws.live, `/v1/deliveries?created_after=${t0}&created_before=${t1}`)).meta.total).toBe(0);
    const page1 = await get(ws.live, '/v1/deliveries?limit=2');
    expect(page1.meta).toMatchObject({ total: 3, limit: 2, offset: 0 });
    const page2 = await get(ws.live, `/v1/deliveries?limit=2&cursor=${page1.meta.next_cursor}`);
    expect([...page1.data, ...page2.data].map((d: { id: string }) => d.id)).toEqual(ids);
    expect((await get(ws.test, '/v1/deliveries')).data.map((d: { webhook_id: string }) => d.webhook_id)).toEqual([
      testHook.id,
    ]);
    const other = await newWorkspace(t);
    expect((await get(other.live, `/v1/deliveries?webhook_id=${a.id}`)).meta.total).toBe(0);
  });

  it.each([
    ['status=done', 'status'],
    ['event=resource.exploded', 'event'],
    ['created_after=yesterday', 'created_after'],
    ['created_before=2026-13-01T00:00:00Z', 'created_before'],
    ['limit=0', 'limit'],
    ['offset=-1', 'offset'],
    ['webhook_id=', 'webhook_id'],
    ['colour=red', 'colour'],
  ])('?%s: 400 validation_error', async (query, field) => {
    const ws = await newWorkspace(t);
    const res = await t.request({ method: 'GET', url: `/v1/deliveries?${query}`, key: ws.live });
    expectValidation(res, { field });
  });
});

describe('POST /v1/webhooks/{id}/deliveries/retry (bulk)', () => {
  it('re-queues every failed delivery since a time in one go, and answers the count', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    const other = await hook(ws);
    rx.plan(h.path, [{ status: 503 }]);
    rx.plan(other.path, [{ status: 503 }]);
    await resource(ws.live);
    offsetMs += 1000;
    const since = new Date(clock.now()).toISOString();
    await resource(ws.live);
    await resource(ws.live);
    await worker.runOnce();
    offsetMs += 2 * 60_000;
    await worker.runOnce(); // the retries fail too: every delivery is now failed
    expect((await get(ws.live, `/v1/deliveries?webhook_id=${h.id}&status=failed`)).meta.total).toBe(3);

    rx.plan(h.path, [{ status: 200 }]);
    const before = rx.to(h.path).length;
    const res = await post(ws.live, `/v1/webhooks/${h.id}/deliveries/retry`, { status: 'failed', since });
    expect(res.statusCode, res.body).toBe(200);
    expect(json(res).data).toEqual({ requeued: 2 });
    expect((await get(ws.live, `/v1/deliveries?webhook_id=${h.id}&status=pending`)).meta.total).toBe(2);
    expect((await get(ws.live, `/v1/deliveries?webhook_id=${other.id}&status=failed`)).meta.total).toBe(3);
    await worker.runOnce();
    expect(rx.to(h.path).length).toBe(before + 2);
    expect((await get(ws.live, `/v1/deliveries?webhook_id=${h.id}&status=succeeded`)).meta.total).toBe(2);

    const none = await post(ws.live, `/v1/webhooks/${h.id}/deliveries/retry`, { since });
    expect(json(none).data).toEqual({ requeued: 0 });
  });

  const bad: [string, unknown, string][] = [
    ['no since', { status: 'failed' }, 'since'],
    ['since not a time', { since: 'last week' }, 'since'],
    ['status pending', { status: 'pending', since: '2026-01-01T00:00:00Z' }, 'status'],
    ['status succeeded', { status: 'succeeded', since: '2026-01-01T00:00:00Z' }, 'status'],
    ['unknown field', { since: '2026-01-01T00:00:00Z', limit: 5 }, 'limit'],
  ];
  for (const [name, body, field] of bad) {
    it(`${name}: 400 validation_error, nothing re-queued`, async () => {
      const ws = await newWorkspace(t);
      const h = await hook(ws);
      const res = await expectNoChange(t, () => post(ws.live, `/v1/webhooks/${h.id}/deliveries/retry`, body));
      expectValidation(res, { field });
    });
  }

  it('a disabled endpoint: 409 webhook_disabled; an unknown one: 404', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    await post(ws.live, `/v1/webhooks/${h.id}/disable`);
    const body = { since: '2026-01-01T00:00:00Z' };
    expectError(
      await expectNoChange(t, () => post(ws.live, `/v1/webhooks/${h.id}/deliveries/retry`, body)),
      409,
      'webhook_disabled',
    );
    expectError(
      await post(ws.live, '/v1/webhooks/wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R/deliveries/retry', body),
      404,
      'not_found',
    );
  });
});

describe('failed attempts in the server log', () => {
  it('each failed attempt is logged at info with webhook, event, attempt number, outcome and next attempt', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    rx.plan(h.path, [{ status: 500 }]);
    await resource(ws.live);
    logged.length = 0;
    await worker.runOnce();
    offsetMs += 2 * 60_000;
    await worker.runOnce();
    const mine = logged.filter((l) => l.obj.webhookId === h.id);
    expect(mine.map((l) => l.msg)).toEqual([
      'webhook delivery attempt failed',
      'webhook delivery failed; no retries left',
    ]);
    expect(mine[0]?.obj).toMatchObject({ event: 'resource.created', attempt: 1, outcome: 'HTTP 500' });
    expect(String(mine[0]?.obj.nextAttemptAt)).toMatch(/^\d{4}-\d\d-\d\dT.*Z$/);
    expect(mine[1]?.obj).toMatchObject({ attempt: 2, outcome: 'HTTP 500', nextAttemptAt: null });
  });
});

describe('GET /v1/deliveries/summary', () => {
  it("counts the environment's deliveries per hour and state, the success rate, and the newest failures", async () => {
    const ws = await newWorkspace(t);
    const ok = await hook(ws);
    const bad = await hook(ws);
    const inTest = await hook(ws, [...RESOURCE_EVENT_TYPES], ws.test);
    rx.plan(bad.path, [{ status: 500, body: 'down' }]);
    const empty = (await get(ws.live, '/v1/deliveries/summary')).data;
    expect(empty).toMatchObject({ window: '24h', totals: { succeeded: 0, failed: 0 }, success_rate: null });
    expect(empty.recent_failures).toEqual([]);
    await resource(ws.live);
    await resource(ws.live);
    await resource(ws.test);
    await worker.runOnce();
    offsetMs += 67_000; // the one retry (WEBHOOK_MAX_RETRIES: 1, 60 s ± 10 %) falls due, and fails too
    await worker.runOnce();

    const s = (await get(ws.live, '/v1/deliveries/summary')).data;
    expect(s.totals).toEqual({ succeeded: 2, failed: 2, pending: 0, cancelled: 0 });
    expect(s.success_rate).toBe(0.5);
    expect(s.series).toHaveLength(24);
    const hourOf = (iso: string) => iso.slice(0, 13);
    expect(hourOf(s.series[23].start)).toBe(hourOf(new Date(clock.now()).toISOString()));
    expect(s.since).toBe(s.series[0].start);
    const counted = s.series.reduce(
      (n: number, b: { succeeded: number; failed: number }) => n + b.succeeded + b.failed,
      0,
    );
    expect(counted).toBe(4);
    expect(s.recent_failures.map((d: { webhook_id: string; status: string }) => [d.webhook_id, d.status])).toEqual([
      [bad.id, 'failed'],
      [bad.id, 'failed'],
    ]);
    const ids = s.recent_failures.map((d: { id: string }) => d.id);
    expect([...ids].sort().reverse()).toEqual(ids);
    const month = (await get(ws.live, '/v1/deliveries/summary?window=30d')).data;
    expect(month).toMatchObject({ period_hours: 24, totals: s.totals });
    expect(month.series).toHaveLength(30);
    expect(Date.parse(month.series[29].start) + 24 * 3600_000).toBe(Date.parse(s.series[23].start) + 3600_000);
    const test = (await get(ws.test, '/v1/deliveries/summary?window=7d')).data;
    expect(test).toMatchObject({ period_hours: 6 });
    expect(test.series).toHaveLength(28);
    expect(test.totals).toEqual({ succeeded: 1, failed: 0, pending: 0, cancelled: 0 });
    expect(inTest.id).toMatch(/^wh_/);
    // Seen from an hour later the deliveries are still in the series, all in hours before the current one;
    // from 24 hours later, outside it.
    offsetMs += 3600_000;
    const later = (await get(ws.live, '/v1/deliveries/summary')).data;
    expect(later.totals).toEqual(s.totals);
    const inSeries = later.series.reduce(
      (n: number, b: { succeeded: number; failed: number }) => n + b.succeeded + b.failed,
      0,
    );
    expect(inSeries).toBe(4);
    expect(later.series[23].succeeded + later.series[23].failed).toBe(0);
    offsetMs += 24 * 3600_000;
    const dayAfter = (await get(ws.live, '/v1/deliveries/summary')).data;
    expect(dayAfter.totals).toEqual({ succeeded: 0, failed: 0, pending: 0, cancelled: 0 });
    expect(dayAfter.recent_failures).toHaveLength(2);
    expect(ok.id).toMatch(/^wh_/);
  });

  it.each([
    ['window=1y', 'window'],
    ['window=', 'window'],
    ['limit=5', 'limit'],
  ])('?%s: 400 validation_error', async (query, field) => {
    const ws = await newWorkspace(t);
    const res = await t.request({ method: 'GET', url: `/v1/deliveries/summary?${query}`, key: ws.live });
    expectValidation(res, { field });
  });
});

describe('a delivery attempt keeps its request headers', () => {
  it('the values sent, as the receiver got them', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    await resource(ws.live);
    await worker.runOnce();
    const [d] = (await get(ws.live, `/v1/webhooks/${h.id}/deliveries`)).data;
    const detail = (await get(ws.live, `/v1/webhooks/${h.id}/deliveries/${d.id}`)).data;
    const sent = detail.attempts[0].request_headers as Record<string, string>;
    const got = rx.to(h.path)[0]?.headers ?? {};
    expect(Object.keys(sent).sort()).toEqual([
      'content-length',
      'content-type',
      'user-agent',
      'webhook-id',
      'webhook-signature',
      'webhook-timestamp',
      'x-service-signature',
    ]);
    for (const [name, value] of Object.entries(sent)) expect(got[name], name).toBe(value);
    expect(sent['webhook-id']).toBe(d.event_id);
  });
});
