import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/kernel/principal.js';
import type { Unit } from '../../src/platform/unit-of-work.js';
import { asCli, json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';

// Backends: both — the stored answer commits in the write's own transaction
// Tier: quick
// docs/api.md#idempotency: the answer to an idempotent write commits in the write's own transaction. The process
// "dies" right after the write committed and before anything was answered: a retry must replay the
// first answer, never run the write a second time (before: the claim was freed, or expired after
// 60 s, and the retry created a second resource).

let t: TestApp;
let crashAfterWrite = false;
beforeAll(async () => {
  t = await startTestApp({
    wrapServices(s) {
      for (const name of ['create', 'archive'] as const) {
        const original = s.resources[name] as (u: Unit<Principal>, ...rest: unknown[]) => Promise<unknown>;
        (s.resources as Record<string, unknown>)[name] = async (p: Unit<Principal>, ...rest: unknown[]) => {
          const result = await original(p, ...rest);
          if (crashAfterWrite) {
            crashAfterWrite = false;
            throw new Error('simulated crash between the commit and the response');
          }
          return result;
        };
      }
    },
  });
});
afterAll(() => t.close());

const post = (key: string, url: string, idem: string, body?: unknown) =>
  t.request({ method: 'POST', url, key, body, headers: { 'idempotency-key': idem } });

describe('a crash between the write and its answer (docs/api.md#idempotency)', () => {
  it('create: the retry replays the first answer; one resource, one event', async () => {
    const ws = await newWorkspace(t);
    crashAfterWrite = true;
    const body = { name: 'Crash', type: 'standard' };
    const first = await post(ws.live, '/v1/resources', 'crash-1', body);
    expect(first.statusCode).toBe(500);
    const retry = await post(ws.live, '/v1/resources', 'crash-1', body);
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    const list = json(await t.request({ method: 'GET', url: '/v1/resources', key: ws.live }));
    expect(list.meta.total).toBe(1);
    expect(list.data[0].id).toBe(json(retry).data.id);
    const events = json(await t.request({ method: 'GET', url: '/v1/events', key: ws.live }));
    expect(events.data.map((e: { event: string }) => e.event)).toEqual(['resource.created']);
  });

  it('archive: the retry replays the 200 with the archived resource', async () => {
    const ws = await newWorkspace(t);
    const created = json(await post(ws.live, '/v1/resources', 'c', { name: 'A', type: 'standard' })).data;
    crashAfterWrite = true;
    const url = `/v1/resources/${created.id}/archive`;
    expect((await post(ws.live, url, 'arch')).statusCode).toBe(500);
    const retry = await post(ws.live, url, 'arch');
    expect(retry.statusCode).toBe(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(json(retry).data.status).toBe('archived');
  });

  it('a write that rolled back stores nothing: the retry runs', async () => {
    const ws = await newWorkspace(t);
    const doomed = await ws.key(ws.adminId, 'live');
    await t.services.keyRegistry.revoke(asCli(t.services), doomed.id);
    // Revoked after verification would be the same; here the 401 comes from authentication.
    expect((await post(doomed.key, '/v1/resources', 'rb', { name: 'x', type: 'standard' })).statusCode).toBe(401);
    const ok = await post(ws.live, '/v1/resources', 'rb', { name: 'x', type: 'standard' });
    expect(ok.statusCode).toBe(201);
    expect(ok.headers['idempotent-replayed']).toBeUndefined();
  });
});

describe('duplicates in two server processes at once (docs/api.md#idempotency)', () => {
  it('one runs; the others replay its answer or are 409 idempotency_key_in_use', async () => {
    const other = await startTestApp({ storage: t.storage as typeof t.storage & { url: string } });
    try {
      const ws = await newWorkspace(t);
      const body = { name: 'Twice', type: 'standard' };
      const send = (app: TestApp) =>
        app.request({
          method: 'POST',
          url: '/v1/resources',
          key: ws.live,
          body,
          headers: { 'idempotency-key': 'two' },
        });
      const results = await Promise.all([t, other, t, other, t, other].map(send));
      const created = results.filter((r) => r.statusCode === 201);
      const fresh = created.filter((r) => r.headers['idempotent-replayed'] === undefined);
      for (const r of results.filter((x) => x.statusCode !== 201)) {
        expect(r.statusCode).toBe(409);
        expect(json(r).error.code).toBe('idempotency_key_in_use');
      }
      expect(fresh.length).toBe(1);
      expect(new Set(created.map((r) => json(r).data.id)).size).toBe(1);
      const list = json(await t.request({ method: 'GET', url: '/v1/resources', key: ws.live }));
      expect(list.meta.total).toBe(1);
    } finally {
      await other.close();
    }
  });
});
