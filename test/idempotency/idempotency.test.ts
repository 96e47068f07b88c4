import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isoAt } from '../../src/kernel/clock.js';
import type { ApiKeyPrincipal } from '../../src/kernel/principal.js';
import { hashRequest } from '../../src/modules/idempotency/idempotency.service.js';
import { asCli, json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import { expectNoChange } from '../helpers/snapshot.js';

// Backends: both — idempotency records are rows, claimed and replayed under concurrency
// Tier: quick

let t: TestApp;
let now = Date.parse('2026-11-22T10:00:00.000Z');
beforeAll(async () => {
  t = await startTestApp({ clock: { now: () => now } });
});
afterAll(() => t.close());

const post = (
  ws: TestWorkspace,
  idem: string | undefined,
  body: unknown = { name: 'Idem', type: 'standard' },
  key = ws.live,
  url = '/v1/resources',
) => t.request({ method: 'POST', url, key, body, headers: idem === undefined ? {} : { 'idempotency-key': idem } });

async function count(ws: TestWorkspace, key = ws.live): Promise<number> {
  return json(await t.request({ method: 'GET', url: '/v1/resources', key })).meta.total;
}

describe('Idempotency-Key on POST (docs/api.md#idempotency)', () => {
  it('a repeat replays the first response (status, body) with Idempotent-Replayed: true', async () => {
    const ws = await newWorkspace(t);
    const first = await post(ws, 'create-1');
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await expectNoChange(t, () => post(ws, 'create-1'));
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(json(again)).toEqual(json(first));
    expect(again.headers['content-type']).toMatch(/^application\/json/);
    expect(await count(ws)).toBe(1);
  });

  it('the same body with other whitespace or key order is the same request', async () => {
    const ws = await newWorkspace(t);
    const a = await post(ws, 'k', { name: 'A', type: 'standard', metadata: { x: '1', y: '2' } });
    expect(a.statusCode).toBe(201);
    const b = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: '{ "type": "standard", "metadata": {"y":"2", "x":"1"}, "name": "A" }',
      headers: { 'idempotency-key': 'k', 'content-type': 'application/json' },
    });
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(json(b)).toEqual(json(a));
  });

  it('the same key with another body or path is 409 idempotency_key_reused, nothing written', async () => {
    const ws = await newWorkspace(t);
    const id = await createResource(t, ws.live);
    expect((await post(ws, 'k1')).statusCode).toBe(201);
    expectError(
      await expectNoChange(t, () => post(ws, 'k1', { name: 'Other', type: 'standard' })),
      409,
      'idempotency_key_reused',
    );
    expectError(
      await expectNoChange(t, () => post(ws, 'k1', {}, ws.live, `/v1/resources/${id}/archive`)),
      409,
      'idempotency_key_reused',
    );
    expect(await count(ws)).toBe(2);
  });

  it('concurrent duplicates create exactly one resource; the others replay or are 409 in_use', async () => {
    const ws = await newWorkspace(t);
    const results = await Promise.all(Array.from({ length: 12 }, () => post(ws, 'race')));
    const created = results.filter((r) => r.statusCode === 201);
    const replayed = created.filter((r) => r.headers['idempotent-replayed'] === 'true');
    const inUse = results.filter((r) => r.statusCode === 409);
    for (const r of inUse) expectError(r, 409, 'idempotency_key_in_use');
    expect(created.length + inUse.length).toBe(12);
    expect(created.length - replayed.length).toBe(1);
    expect(new Set(created.map((r) => json(r).data.id)).size).toBe(1);
    expect(await count(ws)).toBe(1);
    // Once the first has finished, every repeat replays.
    const after = await post(ws, 'race');
    expect(after.headers['idempotent-replayed']).toBe('true');
    expect(json(after).data.id).toBe(json(created[0] as never).data.id);
  });

  it('keys are per workspace and per environment (docs/api.md#environments)', async () => {
    const ws = await newWorkspace(t);
    const other = await newWorkspace(t);
    const live = await post(ws, 'shared');
    const test = await post(ws, 'shared', undefined, ws.test);
    const elsewhere = await post(other, 'shared');
    for (const r of [live, test, elsewhere]) {
      expect(r.statusCode).toBe(201);
      expect(r.headers['idempotent-replayed']).toBeUndefined();
    }
    expect(new Set([live, test, elsewhere].map((r) => json(r).data.id)).size).toBe(3);
    expect(await count(ws)).toBe(1);
    expect(await count(ws, ws.test)).toBe(1);
  });

  it('another key of the same workspace and environment replays the stored response', async () => {
    const ws = await newWorkspace(t);
    const m = await ws.member('member');
    const first = await post(ws, 'team');
    const again = await post(ws, 'team', undefined, m.live);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(json(again)).toEqual(json(first));
  });

  it('covers every POST: archive and unarchive replay too', async () => {
    const ws = await newWorkspace(t);
    const id = await createResource(t, ws.live);
    const url = `/v1/resources/${id}/archive`;
    const a = await t.request({ method: 'POST', url, key: ws.live, headers: { 'idempotency-key': 'arch' } });
    const b = await t.request({ method: 'POST', url, key: ws.live, headers: { 'idempotency-key': 'arch' } });
    expect(a.statusCode).toBe(200);
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(json(b)).toEqual(json(a));
  });

  it('4xx outcomes are stored and replayed (a 404 stays a 404 for that key)', async () => {
    const ws = await newWorkspace(t);
    const url = '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R/archive';
    const a = await t.request({ method: 'POST', url, key: ws.live, headers: { 'idempotency-key': 'missing' } });
    expectError(a, 404, 'not_found');
    const b = await t.request({ method: 'POST', url, key: ws.live, headers: { 'idempotency-key': 'missing' } });
    expect(b.statusCode).toBe(404);
    expect(b.headers['idempotent-replayed']).toBe('true');
  });

  it('requests refused by validation are not stored: the key stays free', async () => {
    const ws = await newWorkspace(t);
    expectValidation(await post(ws, 'v', { name: '' }), { field: 'name' });
    const ok = await post(ws, 'v', { name: 'fine', type: 'standard' });
    expect(ok.statusCode).toBe(201);
    expect(ok.headers['idempotent-replayed']).toBeUndefined();
  });

  for (const bad of ['', 'x'.repeat(256), 'é', 'tab\there', 'new\u0001line']) {
    it(`a malformed key (${JSON.stringify(bad.slice(0, 12))}) is 400, nothing written`, async () => {
      const ws = await newWorkspace(t);
      const res = await expectNoChange(t, () => post(ws, bad));
      expectValidation(res, { field: 'Idempotency-Key', issue: 'invalid_format' });
    });
  }

  it('255 printable ASCII characters are a valid key', async () => {
    const ws = await newWorkspace(t);
    const key = `${' !~'.repeat(85)}`;
    expect((await post(ws, key)).statusCode).toBe(201);
    expect((await post(ws, key)).headers['idempotent-replayed']).toBe('true');
  });

  it('records last 24 h: after that the key runs afresh, and the purge deletes them', async () => {
    const ws = await newWorkspace(t);
    const first = await post(ws, 'day');
    now += 24 * 60 * 60 * 1000 - 1;
    expect((await post(ws, 'day')).headers['idempotent-replayed']).toBe('true');
    now += 2;
    const fresh = await post(ws, 'day', { name: 'New day', type: 'premium' });
    expect(fresh.statusCode).toBe(201);
    expect(fresh.headers['idempotent-replayed']).toBeUndefined();
    expect(json(fresh).data.id).not.toBe(json(first).data.id);

    const other = await newWorkspace(t);
    await post(other, 'old');
    now += 24 * 60 * 60 * 1000 + 1;
    const purged = await t.services.jobs.find((j) => j.id === 'purge-idempotency')?.run();
    expect(purged).toBeGreaterThanOrEqual(2);
    const left = await t.storage.db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('expires_at', '<=', isoAt(now))
      .execute();
    expect(left).toEqual([]);
  });

  it('a processing row committed by an older server that crashed is taken over at once', async () => {
    // This version never commits a claim on its own (it claims and answers in the write's
    // transaction), so a committed `processing` row can only be an older server's leftover.
    const ws = await newWorkspace(t);
    const body = { name: 'Orphan', type: 'standard' };
    const hash = hashRequest('POST', '/v1/resources', body);
    await t.storage.db
      .insertInto('idempotency_keys')
      .values({
        workspace_id: ws.id,
        env: 'live',
        key: 'orphan',
        request_hash: hash,
        state: 'processing',
        status_code: null,
        response_body: null,
        locked_until: isoAt(now + 60_000),
        expires_at: isoAt(now + 86_400_000),
        created_at: isoAt(now),
      })
      .execute();
    const res = await post(ws, 'orphan', body);
    expect(res.statusCode).toBe(201);
    const again = await post(ws, 'orphan', body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(json(again).data.id).toBe(json(res).data.id);
    expect(await count(ws)).toBe(1);
  });
});

describe('key revocation and idempotency together (docs/api.md#keys-scopes-and-roles, #idempotency)', () => {
  it('a 401 from a key revoked mid-request is not stored; a retry with a live key runs', async () => {
    let revokeNext = false;
    const app = await startTestApp({
      wrapServices(s) {
        const create = s.resources.create;
        s.resources.create = async (actor, input) => {
          if (revokeNext) {
            revokeNext = false;
            await s.keyRegistry.revoke(asCli(s), (actor.actor as ApiKeyPrincipal).keyId);
          }
          return create(actor, input);
        };
      },
    });
    try {
      const ws = await newWorkspace(app);
      const doomed = await ws.key(ws.adminId, 'live');
      revokeNext = true;
      const res = await app.request({
        method: 'POST',
        url: '/v1/resources',
        key: doomed.key,
        body: { name: 'x', type: 'standard' },
        headers: { 'idempotency-key': 'revoked' },
      });
      expectError(res, 401, 'expired_token');
      const retry = await app.request({
        method: 'POST',
        url: '/v1/resources',
        key: ws.live,
        body: { name: 'x', type: 'standard' },
        headers: { 'idempotency-key': 'revoked' },
      });
      expect(retry.statusCode).toBe(201);
      expect(retry.headers['idempotent-replayed']).toBeUndefined();
    } finally {
      await app.close();
    }
  });
});
