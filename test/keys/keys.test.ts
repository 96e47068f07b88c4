import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiKeyPrincipal } from '../../src/kernel/principal.js';
import type { Unit } from '../../src/platform/unit-of-work.js';
import { asCli, json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';
import { expectError } from '../helpers/expect.js';
import { expectNoChange } from '../helpers/snapshot.js';

// Backends: both — digests, revocation and a revoke racing a write are stored and locked on each database
// Tier: quick

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('API keys (docs/api.md#keys-scopes-and-roles)', () => {
  it('are svc_<env>_ + at least 32 base62 characters, and only a SHA-256 digest is stored', async () => {
    const ws = await newWorkspace(t);
    expect(ws.live).toMatch(/^svc_live_[0-9A-Za-z]{32,}$/);
    expect(ws.test).toMatch(/^svc_test_[0-9A-Za-z]{32,}$/);
    const rows = await t.storage.db.selectFrom('api_keys').selectAll().where('workspace_id', '=', ws.id).execute();
    expect(rows.length).toBe(2);
    const dump = JSON.stringify(rows);
    for (const key of [ws.live, ws.test]) {
      expect(dump).not.toContain(key);
      expect(dump).not.toContain(key.slice(9));
      expect(rows.map((r) => r.digest)).toContain(createHash('sha256').update(key).digest('hex'));
    }
  });

  it('are never listed with their secret', async () => {
    const ws = await newWorkspace(t);
    const listed = await t.services.keyRegistry.list(ws.id);
    expect(listed.length).toBe(2);
    for (const k of listed) {
      expect(Object.keys(k)).not.toContain('key');
      expect(Object.keys(k)).not.toContain('digest');
      expect(JSON.stringify(k)).not.toContain(ws.live.slice(13));
    }
  });

  it('revocation is immediate: the next request is 401 expired_token, other keys keep working', async () => {
    const ws = await newWorkspace(t);
    const k = await ws.key(ws.adminId, 'live');
    expect((await t.request({ method: 'GET', url: '/v1/users/me', key: k.key })).statusCode).toBe(200);
    const revoked = await t.services.keyRegistry.revoke(asCli(t.services), k.id);
    expect(revoked.revoked_at).toMatch(/Z$/);
    expectError(await t.request({ method: 'GET', url: '/v1/users/me', key: k.key }), 401, 'expired_token');
    expect((await t.request({ method: 'GET', url: '/v1/users/me', key: ws.live })).statusCode).toBe(200);
    // Revoking twice keeps the first time; an unknown id is not found.
    expect((await t.services.keyRegistry.revoke(asCli(t.services), k.id)).revoked_at).toBe(revoked.revoked_at);
    await expect(
      t.services.keyRegistry.revoke(asCli(t.services), 'key_01JD3K8Z6W6J9Q4X1V5N2M7P8R'),
    ).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('a write whose key is revoked before it commits has no effect (service level)', async () => {
    const ws = await newWorkspace(t);
    const k = await ws.key(ws.adminId, 'live');
    const verified = await t.services.keyRegistry.verify(`Bearer ${k.key}`);
    if (!verified.ok) throw new Error('key did not verify');
    const id = await createResource(t, ws.live);
    await t.services.keyRegistry.revoke(asCli(t.services), k.id);
    const actor = verified.principal;
    await expectNoChange(t, async () => {
      await expect(
        t.services.resources.create(t.services.uow.as(actor), { name: 'x', type: 'standard' }),
      ).rejects.toMatchObject({
        code: 'expired_token',
      });
      await expect(t.services.resources.update(t.services.uow.as(actor), id, { name: 'y' })).rejects.toMatchObject({
        code: 'expired_token',
      });
      await expect(t.services.resources.archive(t.services.uow.as(actor), id)).rejects.toMatchObject({
        code: 'expired_token',
      });
      await expect(t.services.resources.remove(t.services.uow.as(actor), id)).rejects.toMatchObject({
        code: 'expired_token',
      });
      await expect(t.services.users.patchMe(t.services.uow.as(actor), { name: 'z' })).rejects.toMatchObject({
        code: 'expired_token',
      });
    });
  });
});

describe('a key revoked while its request runs (docs/api.md#keys-scopes-and-roles, through HTTP)', () => {
  let app: TestApp;
  let revokeDuring: string | null = null;
  beforeAll(async () => {
    // Revokes the caller's key after authentication and before the service's transaction.
    app = await startTestApp({
      wrapServices(s) {
        for (const name of ['create', 'update', 'archive', 'unarchive', 'remove'] as const) {
          const original = s.resources[name] as (...a: unknown[]) => Promise<unknown>;
          (s.resources as Record<string, unknown>)[name] = async (...args: unknown[]) => {
            const actor = (args[0] as Unit<ApiKeyPrincipal>).actor;
            if (revokeDuring === name) await s.keyRegistry.revoke(asCli(s), actor.keyId);
            return original(...args);
          };
        }
        const patchMe = s.users.patchMe;
        s.users.patchMe = async (actor, input) => {
          if (revokeDuring === 'patchMe') await s.keyRegistry.revoke(asCli(s), (actor.actor as ApiKeyPrincipal).keyId);
          return patchMe(actor, input);
        };
      },
    });
  });
  afterAll(() => app.close());

  const cases = [
    { name: 'create', method: 'POST', url: () => '/v1/resources', body: { name: 'x', type: 'standard' } },
    { name: 'update', method: 'PUT', url: (id: string) => `/v1/resources/${id}`, body: { name: 'changed' } },
    { name: 'archive', method: 'POST', url: (id: string) => `/v1/resources/${id}/archive` },
    { name: 'remove', method: 'DELETE', url: (id: string) => `/v1/resources/${id}` },
    { name: 'patchMe', method: 'PATCH', url: () => '/v1/users/me', body: { name: 'changed' } },
  ] as const;
  for (const c of cases) {
    it(`${c.method} (${c.name}): 401 expired_token and nothing changed`, async () => {
      const ws = await newWorkspace(app);
      const id = await createResource(app, ws.live);
      const k = await ws.key(ws.adminId, 'live');
      revokeDuring = c.name;
      try {
        // The only change allowed is the revocation itself.
        const before = json(await app.request({ method: 'GET', url: `/v1/resources/${id}`, key: ws.live }));
        const res = await app.request({
          method: c.method,
          url: c.url(id),
          key: k.key,
          body: 'body' in c ? c.body : undefined,
        });
        expectError(res, 401, 'expired_token');
        const after = json(await app.request({ method: 'GET', url: `/v1/resources/${id}`, key: ws.live }));
        expect(after).toEqual(before);
        const list = json(await app.request({ method: 'GET', url: '/v1/resources', key: ws.live }));
        expect(list.meta.total).toBe(1);
        const me = json(await app.request({ method: 'GET', url: '/v1/users/me', key: ws.live })).data;
        expect(me.name).toBeNull();
      } finally {
        revokeDuring = null;
      }
    });
  }
});
