import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — the outbox, claims, attempts and retries are rows
// Tier: quick
// docs/operations.md deliveries to a real HTTP receiver on loopback, from the real worker on a real database.
const FAST: Partial<Config> = {
  WEBHOOK_ALLOW_INSECURE_URLS: true,
  WEBHOOK_RETRY_BASE_MS: 20,
  WEBHOOK_RETRY_FACTOR: 2,
  WEBHOOK_TIMEOUT_MS: 2000,
  WEBHOOK_POLL_MS: 50,
};

let t: TestApp;
let rx: Receiver;
let worker: DeliveryWorker;
beforeAll(async () => {
  t = await startTestApp({ config: FAST });
  rx = await startReceiver();
  worker = testWorker(t);
  worker.start();
});
afterAll(async () => {
  await worker.stop(1000);
  await rx.close();
  await t.close();
});

let n = 0;
async function hook(ws: TestWorkspace, events: string[], key = ws.live) {
  const path = `/h${++n}`;
  const res = await t.request({ method: 'POST', url: '/v1/webhooks', key, body: { url: rx.url(path), events } });
  expect(res.statusCode, res.body).toBe(201);
  const data = json(res).data as { id: string; secret: string };
  return { ...data, path };
}
async function resource(key: string, name = 'R') {
  const res = await t.request({ method: 'POST', url: '/v1/resources', key, body: { name, type: 'standard' } });
  expect(res.statusCode, res.body).toBe(201);
  return json(res).data as { id: string };
}
const deliveries = async (key: string, hookId: string, query = '') =>
  json(await t.request({ method: 'GET', url: `/v1/webhooks/${hookId}/deliveries${query}`, key }));

describe('signed deliveries (docs/api.md#webhook-deliveries)', () => {
  it('POSTs {id, event, created_at, data} with X-Service-Signature and Standard Webhooks headers', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['*']);
    const r = await resource(ws.live, 'Signed');
    await rx.until(() => rx.to(h.path).length === 1);
    const got = rx.to(h.path)[0];
    if (!got) throw new Error('no delivery');
    const body = JSON.parse(got.body);
    expect(Object.keys(body)).toEqual(['id', 'event', 'created_at', 'data']);
    expect(body.event).toBe('resource.created');
    expect(body.id).toMatch(/^evt_/);
    expect(body.data.resource_id).toBe(r.id);
    expect(body.data.resource).toMatchObject({ id: r.id, name: 'Signed', status: 'active' });
    expect(got.headers['content-type']).toBe('application/json');
    // By hand, as the spec says: hex HMAC-SHA256 of the raw body keyed with the secret.
    expect(got.headers['x-service-signature']).toBe(createHmac('sha256', h.secret).update(got.body).digest('hex'));
    // And with an independent verifier of the Standard Webhooks headers.
    expect(got.headers['webhook-id']).toBe(body.id);
    expect(new Webhook(h.secret).verify(got.body, got.headers as Record<string, string>)).toEqual(body);
    // The event the API serves is the same object.
    const ev = json(await t.request({ method: 'GET', url: `/v1/events/${body.id}`, key: ws.live })).data;
    expect(ev).toEqual(body);
  });

  it('each event type has its documented payload (docs/api.md#events); subscriptions filter by type', async () => {
    const ws = await newWorkspace(t);
    const all = await hook(ws, ['*']);
    const status = await hook(ws, ['resource.status_changed']);
    const r = await resource(ws.live, 'Before');
    const put = await t.request({ method: 'PUT', url: `/v1/resources/${r.id}`, key: ws.live, body: { name: 'After' } });
    expect(put.statusCode).toBe(200);
    await t.request({ method: 'POST', url: `/v1/resources/${r.id}/archive`, key: ws.live });
    await t.request({ method: 'POST', url: `/v1/resources/${r.id}/archive`, key: ws.live }); // docs/api.md#resources: no event
    await t.request({ method: 'POST', url: `/v1/resources/${r.id}/unarchive`, key: ws.live });
    // Delivered before the delete: deleting a resource purges deliveries of the resource's events still pending.
    await rx.until(() => rx.to(all.path).length === 4 && rx.to(status.path).length === 2);
    await t.request({ method: 'DELETE', url: `/v1/resources/${r.id}`, key: ws.live });
    await rx.until(() => rx.to(all.path).length === 5 && rx.to(status.path).length === 2);
    const bodies = rx.to(all.path).map((x) => JSON.parse(x.body));
    bodies.sort((a, b) => (a.id < b.id ? -1 : 1));
    expect(bodies.map((b) => b.event)).toEqual([
      'resource.created',
      'resource.updated',
      'resource.status_changed',
      'resource.status_changed',
      'resource.deleted',
    ]);
    expect(bodies[1].data).toMatchObject({
      resource_id: r.id,
      resource: { name: 'After' },
      previous_attributes: { name: 'Before' },
    });
    expect(Object.keys(bodies[1].data.previous_attributes)).toEqual(['name']);
    expect(bodies[2].data).toEqual({ resource_id: r.id, previous_status: 'active', current_status: 'archived' });
    expect(bodies[3].data).toEqual({ resource_id: r.id, previous_status: 'archived', current_status: 'active' });
    expect(bodies[4].data).toEqual({ resource_id: r.id }); // docs/api.md#resources: id only
    expect(rx.to(status.path).map((x) => JSON.parse(x.body).event)).toEqual([
      'resource.status_changed',
      'resource.status_changed',
    ]);
  });

  it('test-key events go only to test webhooks, live to live (docs/api.md#environments)', async () => {
    const ws = await newWorkspace(t);
    const live = await hook(ws, ['*'], ws.live);
    const test = await hook(ws, ['*'], ws.test);
    const lr = await resource(ws.live, 'L');
    const tr = await resource(ws.test, 'T');
    await rx.until(() => rx.to(live.path).length === 1 && rx.to(test.path).length === 1);
    expect(JSON.parse(rx.to(live.path)[0]?.body ?? '{}').data.resource_id).toBe(lr.id);
    expect(JSON.parse(rx.to(test.path)[0]?.body ?? '{}').data.resource_id).toBe(tr.id);
    const liveEvents = json(await t.request({ method: 'GET', url: '/v1/events', key: ws.live })).data;
    expect(liveEvents.map((e: { data: { resource_id: string } }) => e.data.resource_id)).toEqual([lr.id]);
    const testEventId = JSON.parse(rx.to(test.path)[0]?.body ?? '{}').id;
    expect((await t.request({ method: 'GET', url: `/v1/events/${testEventId}`, key: ws.live })).statusCode).toBe(404);
  });
});

describe('failures and retries', () => {
  it('a receiver that fails 3 times then succeeds gets the same event 4 times; the log has every attempt', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['resource.created']);
    rx.plan(h.path, [
      { status: 500, body: 'boom' },
      { status: 503, body: 'x'.repeat(5000) },
      { status: 302, headers: { location: rx.url('/elsewhere') } },
      { status: 204 },
    ]);
    await resource(ws.live);
    await rx.until(() => rx.to(h.path).length === 4);
    const ids = rx.to(h.path).map((x) => JSON.parse(x.body).id);
    expect(new Set(ids).size).toBe(1);
    expect(rx.to('/elsewhere')).toHaveLength(0); // redirects are not followed
    const d = await eventually(async () => {
      const list = await deliveries(ws.live, h.id);
      return list.data[0]?.status === 'succeeded' ? list.data[0] : undefined;
    });
    expect(d).toMatchObject({
      event: 'resource.created',
      event_id: ids[0],
      attempt_count: 4,
      last_response_status: 204,
    });
    const detail = json(
      await t.request({ method: 'GET', url: `/v1/webhooks/${h.id}/deliveries/${d.id}`, key: ws.live }),
    ).data;
    expect(detail.attempts.map((a: { response_status: number }) => a.response_status)).toEqual([500, 503, 302, 204]);
    expect(detail.attempts.map((a: { number: number }) => a.number)).toEqual([1, 2, 3, 4]);
    expect(detail.attempts[0]).toMatchObject({ response_body: 'boom', error: 'HTTP 500' });
    expect(detail.attempts[1].response_body).toHaveLength(1024); // first 1 KiB
    expect(detail.attempts[2].error).toMatch(/redirect/);
    expect(detail.attempts[3].error).toBeNull();
    for (const a of detail.attempts) {
      expect(a.duration_ms).toBeGreaterThanOrEqual(0);
      expect(a.attempted_at).toMatch(/Z$/);
    }
  });

  it('gives up after WEBHOOK_MAX_RETRIES retries (6 attempts); a manual retry sends once more', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['resource.created']);
    rx.plan(h.path, [{ status: 500 }]);
    await resource(ws.live);
    const d = await eventually(async () => {
      const list = await deliveries(ws.live, h.id, '?status=failed');
      return list.data[0];
    });
    expect(d.attempt_count).toBe(6);
    expect(rx.to(h.path)).toHaveLength(6);
    expect((await deliveries(ws.live, h.id, '?status=pending')).data).toEqual([]);
    rx.plan(h.path, [{ status: 200 }]);
    const retry = await t.request({
      method: 'POST',
      url: `/v1/webhooks/${h.id}/deliveries/${d.id}/retry`,
      key: ws.live,
    });
    expect(retry.statusCode, retry.body).toBe(200);
    expect(json(retry).data).toMatchObject({ id: d.id, status: 'pending' });
    await eventually(async () => (await deliveries(ws.live, h.id, '?status=succeeded')).data[0]);
    expect(rx.to(h.path)).toHaveLength(7);
    expect(new Set(rx.to(h.path).map((x) => JSON.parse(x.body).id)).size).toBe(1);
  });

  it('a hanging receiver times out while another webhook is served at once', async () => {
    const slow = await startTestApp({ config: { ...FAST, WEBHOOK_TIMEOUT_MS: 1500, WEBHOOK_MAX_RETRIES: 0 } });
    const w = testWorker(slow);
    w.start();
    try {
      const ws = await newWorkspace(slow);
      const mk = async (path: string) =>
        json(
          await slow.request({
            method: 'POST',
            url: '/v1/webhooks',
            key: ws.live,
            body: { url: rx.url(path), events: ['*'] },
          }),
        ).data.id as string;
      rx.plan('/hang', ['hang']);
      const hangId = await mk('/hang');
      await mk('/prompt');
      await slow.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: 'x', type: 'custom' } });
      await rx.until(() => rx.to('/prompt').length === 1 && rx.to('/hang').length === 1);
      // The prompt receiver was served while the hanging request was still open.
      expect(rx.hangingCount).toBeGreaterThanOrEqual(1);
      const failed = await eventually(async () => {
        const res = json(await slow.request({ method: 'GET', url: `/v1/webhooks/${hangId}/deliveries`, key: ws.live }));
        return res.data[0]?.status === 'failed' ? res.data[0] : undefined;
      });
      expect(failed.last_error).toMatch(/timeout/);
      expect(failed.last_response_status).toBeNull();
    } finally {
      await w.stop(2000);
      await slow.close();
    }
  });

  it('a connection error is a failure that is retried', async () => {
    const ws = await newWorkspace(t);
    const res = await t.request({
      method: 'POST',
      url: '/v1/webhooks',
      key: ws.live,
      body: { url: 'http://127.0.0.1:1/closed', events: ['*'] },
    });
    const id = json(res).data.id;
    await resource(ws.live);
    const d = await eventually(async () => {
      const list = await deliveries(ws.live, id);
      return list.data[0]?.attempt_count >= 2 ? list.data[0] : undefined;
    });
    expect(d.last_error).toMatch(/ECONNREFUSED/);
  });
});

describe('cancellation and purge', () => {
  it('DELETE /webhooks/{id} cancels its pending retries before answering', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['*']);
    rx.plan(h.path, [{ status: 500 }]);
    await resource(ws.live);
    await rx.until(() => rx.to(h.path).length >= 2);
    const del = await t.request({ method: 'DELETE', url: `/v1/webhooks/${h.id}`, key: ws.live });
    expect(del.statusCode).toBe(204);
    await worker.idle();
    const after = rx.to(h.path).length;
    const pending = await t.storage.db.selectFrom('deliveries').select('id').where('webhook_id', '=', h.id).execute();
    expect(pending).toEqual([]);
    await new Promise((r) => setTimeout(r, 300)); // several retry periods (20–80 ms) and polls
    expect(rx.to(h.path).length).toBe(after);
  });

  it("DELETE /resources/{id} purges the resource's events and pending deliveries, then emits resource.deleted (docs/api.md#resources)", async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['*']);
    rx.plan(h.path, [{ status: 500 }]);
    const r = await resource(ws.live, 'secret name');
    await t.request({ method: 'PUT', url: `/v1/resources/${r.id}`, key: ws.live, body: { metadata: { a: 'b' } } });
    await rx.until(() => rx.to(h.path).length >= 2);
    // Both deliveries are still failing, so pending: the delete must take them.
    expect((await t.request({ method: 'DELETE', url: `/v1/resources/${r.id}`, key: ws.live })).statusCode).toBe(204);
    rx.plan(h.path, [{ status: 200 }]);
    const events = json(await t.request({ method: 'GET', url: `/v1/events?resource_id=${r.id}`, key: ws.live }));
    expect(events.data.map((e: { event: string }) => e.event)).toEqual(['resource.deleted']);
    expect(events.data[0].data).toEqual({ resource_id: r.id });
    const rows = await t.storage.db.selectFrom('events').select('payload').where('workspace_id', '=', ws.id).execute();
    expect(rows.map((x) => x.payload).join()).not.toContain('secret name');
    const log = await deliveries(ws.live, h.id);
    expect(log.data.map((d: { event: string }) => d.event)).toEqual(['resource.deleted']);
    await eventually(async () => (await deliveries(ws.live, h.id, '?status=succeeded')).data[0]);
  });
});

describe('the events API (docs/api.md#events)', () => {
  it('lists with filters and paging; a refused change records no event', async () => {
    const ws = await newWorkspace(t);
    const a = await resource(ws.live, 'a');
    const b = await resource(ws.live, 'b');
    await t.request({ method: 'POST', url: `/v1/resources/${a.id}/archive`, key: ws.live });
    // Refused changes: validation error, unknown id, and a viewer's write. None is an event.
    await t.request({ method: 'PUT', url: `/v1/resources/${a.id}`, key: ws.live, body: { type: 'premium' } });
    await t.request({ method: 'POST', url: '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R/archive', key: ws.live });
    const viewer = await ws.member('viewer');
    await t.request({ method: 'DELETE', url: `/v1/resources/${b.id}`, key: viewer.live });
    const all = json(await t.request({ method: 'GET', url: '/v1/events', key: ws.live }));
    // Besides the resources': the viewer's arrival and their live key (docs/api.md#platform-events).
    expect(all.meta).toMatchObject({ total: 5, limit: 20, offset: 0, next_cursor: null });
    expect(all.data.map((e: { event: string }) => e.event)).toEqual([
      'resource.created',
      'resource.created',
      'resource.status_changed',
      'member.invited',
      'key.created',
    ]);
    const byType = json(await t.request({ method: 'GET', url: '/v1/events?event=resource.created', key: ws.live }));
    expect(byType.meta.total).toBe(2);
    const byRes = json(await t.request({ method: 'GET', url: `/v1/events?resource_id=${a.id}`, key: ws.live }));
    expect(byRes.data.map((e: { data: { resource_id: string } }) => e.data.resource_id)).toEqual([a.id, a.id]);
    const p1 = json(await t.request({ method: 'GET', url: '/v1/events?limit=3', key: ws.live }));
    const p2 = json(
      await t.request({ method: 'GET', url: `/v1/events?limit=3&cursor=${p1.meta.next_cursor}`, key: ws.live }),
    );
    expect([...p1.data, ...p2.data].map((e: { id: string }) => e.id)).toEqual(
      all.data.map((e: { id: string }) => e.id),
    );
    expect(p2.meta).toMatchObject({ offset: 3, next_cursor: null });
    const bad = await t.request({ method: 'GET', url: '/v1/events?event=resource.exploded', key: ws.live });
    expect(bad.statusCode).toBe(400);
  });

  it('events older than 30 days are purged with their delivery logs', async () => {
    const ws = await newWorkspace(t);
    await resource(ws.live);
    const old = new Date(Date.now() - 31 * 24 * 3600 * 1000).toISOString();
    await t.storage.db.updateTable('events').set({ created_at: old }).where('workspace_id', '=', ws.id).execute();
    const purged = await t.services.jobs.find((j) => j.id === 'purge-events')?.run();
    expect(purged).toBeGreaterThanOrEqual(1);
    expect(json(await t.request({ method: 'GET', url: '/v1/events', key: ws.live })).data).toEqual([]);
  });
});
