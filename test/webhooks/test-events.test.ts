import { Value } from '@sinclair/typebox/value';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/kernel/event-types.js';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { serviceSignature } from '../../src/modules/delivery-engine/signing.js';
import { EVENT_DATA } from '../../src/modules/events/events.schemas.js';
import { ResourceSchema } from '../../src/modules/resources/resources.schemas.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — test events are queued and delivered from the outbox
// Tier: quick
// `POST /webhooks/{id}/test` with an optional `event_type` (docs/api.md#test-events): no body is
// `webhook.test` exactly as before; a catalogue type sends an example of that type (`test: true`)
// to that endpoint only, subscribed or not; an unknown type is a 400 that changes nothing.
let t: TestApp;
let rx: Receiver;
let worker: DeliveryWorker;
beforeAll(async () => {
  t = await startTestApp({ config: { WEBHOOK_ALLOW_INSECURE_URLS: true, WEBHOOK_MAX_RETRIES: 0 } });
  rx = await startReceiver();
  worker = testWorker(t, { listen: false });
});
afterAll(async () => {
  await worker.stop(1000);
  await rx.close();
  await t.close();
});

let n = 0;
async function hook(ws: TestWorkspace, events: string[]) {
  const path = `/t${++n}`;
  const res = await t.request({
    method: 'POST',
    url: '/v1/webhooks',
    key: ws.live,
    body: { url: rx.url(path), events },
  });
  expect(res.statusCode, res.body).toBe(201);
  return { ...(json(res).data as { id: string; secret: string }), path };
}
const sendTest = (ws: TestWorkspace, id: string, body?: unknown) =>
  t.request({ method: 'POST', url: `/v1/webhooks/${id}/test`, key: ws.live, body });
async function drain() {
  while ((await worker.runOnce()) > 0) {}
}
/** The one request `path` received since `from`, with its parsed body. */
function received(path: string, from = 0) {
  const got = rx.to(path).slice(from);
  expect(got).toHaveLength(1);
  const r = got[0] as (typeof got)[number];
  return { ...r, json: JSON.parse(r.body) as Record<string, unknown> & { data: Record<string, unknown> } };
}
const count = async (ws: TestWorkspace, url: string) =>
  (json(await t.request({ method: 'GET', url: `${url}?limit=100`, key: ws.live })).data as unknown[]).length;

describe('test events of a chosen type (docs/api.md#test-events)', () => {
  it('no body, an empty body and `{}` are webhook.test as before: the same shape, no test field', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['*']);
    for (const body of [undefined, '', {}, { event_type: 'webhook.test' }]) {
      const from = rx.to(h.path).length;
      const res =
        body === ''
          ? await t.request({
              method: 'POST',
              url: `/v1/webhooks/${h.id}/test`,
              key: ws.live,
              body: '',
              headers: { 'content-type': 'application/json' },
            })
          : await sendTest(ws, h.id, body);
      expect(res.statusCode, res.body).toBe(202);
      expect(json(res).data).toMatchObject({ webhook_id: h.id, event: 'webhook.test', status: 'pending' });
      await drain();
      const got = received(h.path, from);
      expect(Object.keys(got.json)).toEqual(['id', 'event', 'created_at', 'data']);
      expect(got.json.data).toEqual({ webhook_id: h.id, message: 'This is a test event sent from the API.' });
      const ev = json(await t.request({ method: 'GET', url: `/v1/events/${got.json.id}`, key: ws.live })).data;
      expect(ev).toEqual(got.json);
    }
  });

  it('a catalogue type goes to that endpoint only, even unsubscribed, as an example of the real shape, signed', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['resource.deleted']);
    const other = await hook(ws, ['*']);
    for (const type of EVENT_TYPES) {
      const from = rx.to(h.path).length;
      const res = await sendTest(ws, h.id, { event_type: type });
      expect(res.statusCode, res.body).toBe(202);
      const delivery = json(res).data as { id: string; event: string; event_id: string };
      expect(delivery).toMatchObject({ event: type, webhook_id: h.id });
      await drain();
      const got = received(h.path, from);
      expect(Object.keys(got.json)).toEqual(['id', 'event', 'created_at', 'test', 'data']);
      expect(got.json).toMatchObject({ id: delivery.event_id, event: type, test: true });
      // The example has its type's own data shape.
      expect(Value.Errors(EVENT_DATA[type], [ResourceSchema], got.json.data).First(), type).toBeUndefined();
      // Signed like any delivery: both signatures check with the endpoint's secret.
      expect(got.headers['x-service-signature']).toBe(serviceSignature(h.secret, got.body));
      expect(new Webhook(h.secret).verify(got.body, got.headers as Record<string, string>)).toEqual(got.json);
      // The API serves the same event, marked.
      const ev = json(await t.request({ method: 'GET', url: `/v1/events/${delivery.event_id}`, key: ws.live })).data;
      expect(ev).toEqual(got.json);
      if (!type.startsWith('resource.')) continue;
      // A resource example names no real resource.
      const data = got.json.data as { resource_id: string; resource?: Record<string, unknown> };
      expect(data.resource_id).toMatch(/^res_[0-9A-Z]{26}$/);
      const res404 = await t.request({ method: 'GET', url: `/v1/resources/${data.resource_id}`, key: ws.live });
      expect(res404.statusCode).toBe(404);
      if (type === 'resource.created' || type === 'resource.updated') {
        expect(Object.keys(data.resource ?? {}).sort()).toEqual(
          ['created_at', 'id', 'metadata', 'name', 'status', 'type', 'updated_at', 'workspace_id'].sort(),
        );
        expect(data.resource).toMatchObject({ id: data.resource_id, name: 'Example resource', workspace_id: ws.id });
      }
      if (type === 'resource.updated') expect(got.json.data).toHaveProperty('previous_attributes.name');
      if (type === 'resource.status_changed')
        expect(got.json.data).toMatchObject({ previous_status: 'active', current_status: 'archived' });
      if (type === 'resource.deleted') expect(Object.keys(got.json.data)).toEqual(['resource_id']);
    }
    // No other endpoint got any of them, though it subscribes to everything; no resource exists.
    expect(rx.to(other.path)).toHaveLength(0);
    expect(await count(ws, '/v1/resources')).toBe(0);
    // Listed among the events of their type, marked as tests.
    const listed = json(
      await t.request({ method: 'GET', url: '/v1/events?event=resource.created', key: ws.live }),
    ).data;
    expect(listed).toEqual([expect.objectContaining({ event: 'resource.created', test: true })]);
  });

  it('an unknown type is a 400 naming event_type and the valid values, and changes nothing', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['*']);
    for (const body of [{ event_type: 'resource.exploded' }, { event_type: '*' }, { event_type: 7 }, { type: 'x' }]) {
      const res = await sendTest(ws, h.id, body);
      expect(res.statusCode, res.body).toBe(400);
      const err = json(res).error;
      expect(err.code).toBe('validation_error');
      if ('event_type' in body) {
        expect(err.details[0].field).toBe('event_type');
        for (const v of ['resource.created', 'resource.deleted', 'webhook.test'])
          expect(err.details[0].message).toContain(v);
      }
    }
    await drain();
    expect(await count(ws, '/v1/events')).toBe(0);
    expect(await count(ws, `/v1/webhooks/${h.id}/deliveries`)).toBe(0);
    expect(rx.to(h.path)).toHaveLength(0);
  });

  it('a disabled endpoint: 409 webhook_disabled for a typed test too', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws, ['*']);
    expect((await t.request({ method: 'POST', url: `/v1/webhooks/${h.id}/disable`, key: ws.live })).statusCode).toBe(
      200,
    );
    const res = await sendTest(ws, h.id, { event_type: 'resource.created' });
    expect(res.statusCode).toBe(409);
    expect(json(res).error.code).toBe('webhook_disabled');
  });
});
