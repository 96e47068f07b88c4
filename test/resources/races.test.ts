import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';

// Backends: both — row locks and concurrent writes: separate connections on PostgreSQL
// Tier: quick
// docs/api.md#resources: each resource write reads its row under a row lock inside its transaction and records its
// event only when a row changed. Races of archive, delete and PUT through the real app (on
// PostgreSQL these run on separate connections at the same time), then an event-log check.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

interface StoredEvent {
  id: string;
  type: string;
  created_at: string;
  payload: string;
}

/** Every event of a resource, in id order, read from the outbox itself. */
async function eventsOf(ws: TestWorkspace, resourceId: string): Promise<StoredEvent[]> {
  return t.storage.db
    .selectFrom('events')
    .select(['id', 'type', 'created_at', 'payload'])
    .where('workspace_id', '=', ws.id)
    .where('resource_id', '=', resourceId)
    .orderBy('id')
    .execute();
}

/** Event times never run backwards in id order. */
function expectOrdered(events: StoredEvent[]) {
  for (let i = 1; i < events.length; i++) {
    expect((events[i] as StoredEvent).created_at >= (events[i - 1] as StoredEvent).created_at).toBe(true);
  }
}

const call = (ws: TestWorkspace, method: 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) =>
  t.request({ method, url, key: ws.live, body });

describe('concurrent writes of one resource (docs/api.md#resources)', () => {
  it('10 parallel archives: every answer is the archived resource, one status_changed event', async () => {
    const ws = await newWorkspace(t);
    const id = await createResource(t, ws.live);
    const results = await Promise.all(
      Array.from({ length: 10 }, () => call(ws, 'POST', `/v1/resources/${id}/archive`)),
    );
    for (const r of results) {
      expect(r.statusCode).toBe(200);
      expect(json(r).data.status).toBe('archived');
    }
    const events = await eventsOf(ws, id);
    expect(events.map((e) => e.type)).toEqual(['resource.created', 'resource.status_changed']);
    const counts = json(await t.request({ method: 'GET', url: '/v1/resources?status=archived', key: ws.live }));
    expect(counts.meta.total).toBe(1);
  });

  it('5 parallel deletes: one 204, four 404, one resource.deleted event', async () => {
    const ws = await newWorkspace(t);
    const id = await createResource(t, ws.live);
    const results = await Promise.all(Array.from({ length: 5 }, () => call(ws, 'DELETE', `/v1/resources/${id}`)));
    expect(results.map((r) => r.statusCode).sort()).toEqual([204, 404, 404, 404, 404]);
    expect((await eventsOf(ws, id)).map((e) => e.type)).toEqual(['resource.deleted']);
    expect(json(await t.request({ method: 'GET', url: '/v1/resources', key: ws.live })).meta.total).toBe(0);
  });

  it('a DELETE racing 5 PUTs: no resource.updated survives the delete', async () => {
    for (let round = 0; round < 3; round++) {
      const ws = await newWorkspace(t);
      const id = await createResource(t, ws.live);
      const puts = Array.from({ length: 5 }, (_, i) => call(ws, 'PUT', `/v1/resources/${id}`, { name: `n${i}` }));
      const del = call(ws, 'DELETE', `/v1/resources/${id}`);
      const results = await Promise.all([...puts, del]);
      expect((results.at(-1) as (typeof results)[number]).statusCode).toBe(204);
      for (const r of results.slice(0, 5)) expect([200, 404]).toContain(r.statusCode);
      // docs/api.md#resources: the delete removes the resource's earlier events; nothing may come after it.
      expect((await eventsOf(ws, id)).map((e) => e.type)).toEqual(['resource.deleted']);
    }
  });

  it('parallel PUTs: one event each, ordered by commit, the last one is the stored state', async () => {
    const ws = await newWorkspace(t);
    const id = await createResource(t, ws.live);
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => call(ws, 'PUT', `/v1/resources/${id}`, { name: `name-${i}` })),
    );
    for (const r of results) expect(r.statusCode).toBe(200);
    const events = await eventsOf(ws, id);
    expect(events.map((e) => e.type)).toEqual(['resource.created', ...Array(8).fill('resource.updated')]);
    expectOrdered(events);
    const stored = json(await t.request({ method: 'GET', url: `/v1/resources/${id}`, key: ws.live })).data;
    const last = JSON.parse((events.at(-1) as StoredEvent).payload).data.resource;
    expect(last.name).toBe(stored.name);
    expect(last.updated_at).toBe(stored.updated_at);
    // Each update's previous_attributes is the state the one before it left.
    for (let i = 2; i < events.length; i++) {
      const prev = JSON.parse((events[i - 1] as StoredEvent).payload).data.resource;
      const cur = JSON.parse((events[i] as StoredEvent).payload).data;
      if (cur.previous_attributes.name !== undefined) expect(cur.previous_attributes.name).toBe(prev.name);
    }
  });

  it('archive, unarchive, PUT and DELETE all at once: the log replays to a consistent history', async () => {
    const ws = await newWorkspace(t);
    const ids = await Promise.all(Array.from({ length: 4 }, () => createResource(t, ws.live)));
    const ops = ids.flatMap((id) => [
      call(ws, 'POST', `/v1/resources/${id}/archive`),
      call(ws, 'POST', `/v1/resources/${id}/unarchive`),
      call(ws, 'POST', `/v1/resources/${id}/archive`),
      call(ws, 'PUT', `/v1/resources/${id}`, { name: 'x' }),
      call(ws, 'PUT', `/v1/resources/${id}`, { metadata: { k: 'v' } }),
    ]);
    for (const r of await Promise.all(ops)) expect(r.statusCode).toBe(200);
    for (const id of ids) {
      const events = await eventsOf(ws, id);
      expectOrdered(events);
      // Status changes alternate: each one starts from the status the previous one ended in.
      let status = 'active';
      for (const e of events.filter((x) => x.type === 'resource.status_changed')) {
        const data = JSON.parse(e.payload).data;
        expect(data.previous_status).toBe(status);
        expect(data.current_status).not.toBe(status);
        status = data.current_status;
      }
      const stored = json(await t.request({ method: 'GET', url: `/v1/resources/${id}`, key: ws.live })).data;
      expect(stored.status).toBe(status);
    }
  });
});
