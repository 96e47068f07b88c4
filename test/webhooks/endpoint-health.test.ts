import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { entriesOf, onlyEntry } from '../helpers/audit-entries.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — health windows and the disable are stored and compared at exact times
// Tier: quick
// Endpoint health (docs/api.md#endpoint-health) on a frozen, injected clock: every attempt
// happens at exactly the time the test sets, so the disable moment is checked to the millisecond.
// One attempt per delivery (no retries), so each resource created is one attempt.
const H = 120;
const WINDOW_MS = H * 3_600_000;
const CONFIG: Partial<Config> = {
  WEBHOOK_ALLOW_INSECURE_URLS: true,
  WEBHOOK_MAX_RETRIES: 0,
  WEBHOOK_TIMEOUT_MS: 2000,
  // One attempt per endpoint per claim: a test can leave deliveries pending behind the one attempted.
  WEBHOOK_ENDPOINT_CONCURRENCY: 1,
};

let nowMs = Date.parse('2026-03-01T09:00:00.000Z');
const clock = { now: () => nowMs };
const iso = (ms: number) => new Date(ms).toISOString();
/** What each receiver path answers now. */
const answers = new Map<string, number>();
let t: TestApp;
let rx: Receiver;
let worker: DeliveryWorker;
beforeAll(async () => {
  t = await startTestApp({ config: CONFIG, clock });
  rx = await startReceiver((r) => ({ status: answers.get(r.path) ?? 200 }));
  worker = testWorker(t, { clock, listen: false });
});
afterAll(async () => {
  await worker.stop(1000);
  await rx.close();
  await t.close();
});

let n = 0;
async function hook(ws: TestWorkspace) {
  const path = `/health${++n}`;
  answers.set(path, 500);
  const body = { url: rx.url(path), events: ['*'] };
  const res = await t.request({ method: 'POST', url: '/v1/webhooks', key: ws.live, body });
  expect(res.statusCode, res.body).toBe(201);
  return { id: json(res).data.id as string, path };
}
async function events(ws: TestWorkspace, count: number) {
  for (let i = 0; i < count; i++) {
    const body = { name: 'R', type: 'standard' };
    const res = await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body });
    expect(res.statusCode, res.body).toBe(201);
  }
}
/** `count` events at `atMs`, each attempted once at that moment. */
async function attempts(ws: TestWorkspace, atMs: number, count = 1) {
  nowMs = atMs;
  await events(ws, count);
  while ((await worker.runOnce()) > 0) {}
}
async function endpoint(ws: TestWorkspace, id: string) {
  const res = await t.request({ method: 'GET', url: `/v1/webhooks/${id}`, key: ws.live });
  expect(res.statusCode, res.body).toBe(200);
  return json(res).data as { status: string; disabled_reason: string | null; failing_since: string | null };
}

describe('endpoint health (docs/api.md#endpoint-health)', () => {
  it('disables at exactly WEBHOOK_DISABLE_AFTER_H after the first failure, not one millisecond before', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    const t0 = nowMs + 60_000;
    await attempts(ws, t0, 10);
    expect(await endpoint(ws, h.id)).toMatchObject({
      status: 'enabled',
      disabled_reason: null,
      failing_since: iso(t0),
    });

    await attempts(ws, t0 + WINDOW_MS - 1);
    expect(await endpoint(ws, h.id)).toMatchObject({ status: 'enabled', failing_since: iso(t0) });

    // The disable is the worker's change: one webhook.disabled entry in the audit log, in its transaction.
    const added = await entriesOf(t, ws.id, () => attempts(ws, t0 + WINDOW_MS));
    expect(await endpoint(ws, h.id)).toMatchObject({
      status: 'disabled',
      disabled_reason: 'failing',
      failing_since: iso(t0),
    });
    const disabled = added.filter((e) => e.action !== 'resource.created');
    expect(onlyEntry(disabled, 'webhook.disabled')).toMatchObject({
      actor_type: 'system',
      actor_id: 'worker',
      target_type: 'webhook',
      target_id: h.id,
      env: 'live',
      request_id: null,
      changes: {
        status: { before: 'enabled', after: 'disabled' },
        disabled_reason: { before: null, after: 'failing' },
      },
    });
    // The list shows the same fields.
    const list = json(await t.request({ method: 'GET', url: '/v1/webhooks', key: ws.live })).data;
    expect(list).toEqual([expect.objectContaining({ id: h.id, disabled_reason: 'failing', failing_since: iso(t0) })]);
    // Disabled: the next event is not queued for it (not even as a delivery cancelled when claimed: the
    // receivers this process cached before the worker's disable are not used, docs/performance.md#the-receivers-of-an-event-cached).
    const before = rx.to(h.path).length;
    const queued = async () =>
      json(await t.request({ method: 'GET', url: `/v1/webhooks/${h.id}/deliveries?limit=100`, key: ws.live })).data
        .length;
    const queuedBefore = await queued();
    await attempts(ws, t0 + WINDOW_MS + 1000);
    expect(rx.to(h.path).length).toBe(before);
    expect(await queued()).toBe(queuedBefore);
  });

  it('a disable by health is told to the other endpoints (webhook.disabled, reason failing), never to the disabled one', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    const watchPath = `/watch${++n}`;
    answers.set(watchPath, 200);
    const body = { url: rx.url(watchPath), events: ['webhook.disabled', 'webhook.enabled', 'delivery.exhausted'] };
    const made = await t.request({ method: 'POST', url: '/v1/webhooks', key: ws.live, body });
    expect(made.statusCode, made.body).toBe(201);
    const t0 = nowMs + 60_000;
    await attempts(ws, t0, 10);
    const exhausted = rx.to(watchPath).map((r) => JSON.parse(r.body));
    // Each failed resource delivery, told once to the watcher (docs/api.md#platform-events).
    expect(exhausted.map((e) => [e.event, e.data.webhook_id])).toEqual(Array(10).fill(['delivery.exhausted', h.id]));
    await attempts(ws, t0 + WINDOW_MS);
    expect(await endpoint(ws, h.id)).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });
    const told = rx
      .to(watchPath)
      .map((r) => JSON.parse(r.body))
      .slice(exhausted.length);
    // The same cycle's last failure and the disable it caused, in either order.
    expect(told).toHaveLength(2);
    expect(told.map((e) => [e.event, e.data])).toEqual(
      expect.arrayContaining([
        ['delivery.exhausted', expect.objectContaining({ webhook_id: h.id, last_response_status: 500 })],
        ['webhook.disabled', { webhook_id: h.id, label: null, env: 'live', reason: 'failing' }],
      ]),
    );
    const own = () => rx.to(h.path).map((r) => JSON.parse(r.body).event as string);
    expect(own().filter((e) => e !== 'resource.created')).toEqual([]);
    // Enabled by hand: the watcher hears it once; the endpoint itself never hears of its own status.
    const enabled = await t.request({ method: 'POST', url: `/v1/webhooks/${h.id}/enable`, key: ws.live });
    expect(enabled.statusCode, enabled.body).toBe(200);
    while ((await worker.runOnce()) > 0) {}
    expect(
      rx
        .to(watchPath)
        .map((r) => JSON.parse(r.body).event as string)
        .slice(-1),
    ).toEqual(['webhook.enabled']);
    expect(own().filter((e) => e !== 'resource.created')).toEqual([]);
  });

  it('needs at least 10 failed attempts: 9 spanning the whole window leave it enabled; the 10th disables', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    const t0 = nowMs + 60_000;
    await attempts(ws, t0);
    await attempts(ws, t0 + WINDOW_MS + 5000, 8);
    expect(await endpoint(ws, h.id)).toMatchObject({ status: 'enabled', failing_since: iso(t0) });
    await attempts(ws, t0 + WINDOW_MS + 6000);
    expect(await endpoint(ws, h.id)).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });
  });

  it('any success resets the clock', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    const t0 = nowMs + 60_000;
    await attempts(ws, t0, 10);
    answers.set(h.path, 200);
    await attempts(ws, t0 + WINDOW_MS - 1000);
    expect(await endpoint(ws, h.id)).toMatchObject({ status: 'enabled', failing_since: null });
    answers.set(h.path, 500);
    await attempts(ws, t0 + WINDOW_MS, 10);
    expect(await endpoint(ws, h.id)).toMatchObject({ status: 'enabled', failing_since: iso(t0 + WINDOW_MS) });
  });

  it('re-enabling by hand starts a fresh window', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    const t0 = nowMs + 60_000;
    await attempts(ws, t0, 10);
    await attempts(ws, t0 + WINDOW_MS);
    expect(await endpoint(ws, h.id)).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });

    nowMs = t0 + WINDOW_MS + 60_000;
    const enabled = await t.request({ method: 'POST', url: `/v1/webhooks/${h.id}/enable`, key: ws.live });
    expect(enabled.statusCode, enabled.body).toBe(200);
    expect(json(enabled).data).toMatchObject({ status: 'enabled', disabled_reason: null, failing_since: null });

    const t1 = nowMs + 1000;
    await attempts(ws, t1, 10);
    await attempts(ws, t1 + WINDOW_MS - 1);
    expect(await endpoint(ws, h.id)).toMatchObject({ status: 'enabled', failing_since: iso(t1) });
    await attempts(ws, t1 + WINDOW_MS);
    expect(await endpoint(ws, h.id)).toMatchObject({
      status: 'disabled',
      disabled_reason: 'failing',
      failing_since: iso(t1),
    });
  });

  it('the automatic disable cancels the deliveries still pending, in the same transaction', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    const t0 = nowMs + 60_000;
    await attempts(ws, t0, 10);
    nowMs = t0 + WINDOW_MS;
    await events(ws, 3);
    expect(await worker.runOnce()).toBe(1); // one attempt (it fails and disables); two left pending
    expect(await endpoint(ws, h.id)).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });
    const res = await t.request({
      method: 'GET',
      url: `/v1/webhooks/${h.id}/deliveries?status=cancelled`,
      key: ws.live,
    });
    expect(json(res).data).toHaveLength(2);
    expect(await worker.runOnce()).toBe(0);
  });

  it('a hand-made disable says manual and keeps the endpoint out of health checks', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    const res = await t.request({ method: 'POST', url: `/v1/webhooks/${h.id}/disable`, key: ws.live });
    expect(json(res).data).toMatchObject({ status: 'disabled', disabled_reason: 'manual', failing_since: null });
  });
});
