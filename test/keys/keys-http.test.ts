import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import { expectNoChange } from '../helpers/snapshot.js';

// Backends: both — keys, scopes and expiry are stored and compared on each database
// Tier: quick
// API keys over HTTP: create, list, get, revoke, roll, expires_at, on an injected clock.
let offsetMs = 0;
const clock = { now: () => Date.now() + offsetMs };
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ clock });
});
afterAll(() => t.close());

const req = (method: 'GET' | 'POST' | 'DELETE', url: string, key: string, body?: unknown) =>
  t.request({ method, url, key, body });
async function createKey(key: string, body: Record<string, unknown> = {}) {
  const res = await req('POST', '/v1/keys', key, { name: 'CI', env: 'live', ...body });
  expect(res.statusCode, res.body).toBe(201);
  return json(res).data as { id: string; key: string; scopes: string[]; prefix: string; expires_at: string | null };
}
const status = async (key: string) => (await req('GET', '/v1/users/me', key)).statusCode;
const iso = (ms: number) => new Date(ms).toISOString();

describe('POST /v1/keys', () => {
  it('creates a key owned by the caller and shows the plaintext once', async () => {
    const ws = await newWorkspace(t);
    const res = await req('POST', '/v1/keys', ws.live, { name: 'Deploys', env: 'test', scopes: ['resources:read'] });
    expect(res.statusCode, res.body).toBe(201);
    const k = json(res).data;
    expect(Object.keys(k).sort()).toEqual(
      [
        'id',
        'name',
        'env',
        'prefix',
        'scopes',
        'status',
        'user_id',
        'workspace_id',
        'created_by',
        'rolled_from',
        'created_at',
        'expires_at',
        'revoked_at',
        'last_used_at',
        'key',
      ].sort(),
    );
    expect(k).toMatchObject({
      name: 'Deploys',
      env: 'test',
      scopes: ['resources:read'],
      status: 'active',
      user_id: ws.adminId,
      created_by: ws.adminId,
      workspace_id: ws.id,
      expires_at: null,
      revoked_at: null,
      last_used_at: null,
    });
    expect(k.key).toMatch(/^svc_test_[0-9A-Za-z]{43}$/);
    expect(k.prefix).toBe(k.key.slice(9, 13));
    expect(k.id).toMatch(/^key_/);

    // The key works, with its scopes; it is never shown again, and only its digest is stored.
    expect((await req('GET', '/v1/resources', k.key)).statusCode).toBe(200);
    expectError(await req('GET', '/v1/users/me', k.key), 403, 'insufficient_scope');
    const { key: plaintext, ...record } = k;
    expect(json(await req('GET', `/v1/keys/${k.id}`, ws.live))).toEqual({ data: record });
    const list = await req('GET', '/v1/keys?limit=100', ws.live);
    expect(list.body).not.toContain(plaintext);
    expect(list.body).not.toContain(plaintext.slice(13));
    const row = await t.storage.db.selectFrom('api_keys').selectAll().where('id', '=', k.id).executeTakeFirstOrThrow();
    expect(row.digest).toBe(createHash('sha256').update(plaintext).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(plaintext.slice(13));
  });

  it('without scopes the new key gets the calling key’s: every scope, or the restricted list', async () => {
    const ws = await newWorkspace(t);
    expect((await createKey(ws.live)).scopes).toContain('webhooks:write');
    const restricted = await createKey(ws.live, { scopes: ['resources:read', 'keys:write'] });
    expect((await createKey(restricted.key)).scopes).toEqual(['resources:read', 'keys:write']);
  });

  it('a key cannot mint wider scopes, and a test key cannot mint a live key: 403, nothing written', async () => {
    const ws = await newWorkspace(t);
    const restricted = await createKey(ws.live, { scopes: ['resources:read', 'keys:write'] });
    const wider = await expectNoChange(t, () =>
      req('POST', '/v1/keys', restricted.key, { name: 'x', env: 'live', scopes: ['webhooks:write'] }),
    );
    expect(expectError(wider, 403, 'insufficient_scope').message).toContain('webhooks:write');
    const live = await expectNoChange(t, () => req('POST', '/v1/keys', ws.test, { name: 'x', env: 'live' }));
    expectError(live, 403, 'insufficient_scope');
    expect((await req('POST', '/v1/keys', ws.test, { name: 'x', env: 'test' })).statusCode).toBe(201);
  });

  const bad: [string, unknown, string][] = [
    ['no name', { env: 'live' }, 'name'],
    ['empty name', { name: '', env: 'live' }, 'name'],
    ['name over 100 characters', { name: 'x'.repeat(101), env: 'live' }, 'name'],
    ['no env', { name: 'x' }, 'env'],
    ['unknown env', { name: 'x', env: 'prod' }, 'env'],
    ['unknown scope', { name: 'x', env: 'live', scopes: ['keys:admin'] }, 'scopes.0'],
    ['empty scopes', { name: 'x', env: 'live', scopes: [] }, 'scopes'],
    ['duplicate scopes', { name: 'x', env: 'live', scopes: ['keys:read', 'keys:read'] }, 'scopes'],
    ['expires_at not a time', { name: 'x', env: 'live', expires_at: 'tomorrow' }, 'expires_at'],
    ['expires_at in the past', { name: 'x', env: 'live', expires_at: '2020-01-01T00:00:00.000Z' }, 'expires_at'],
    ['user_id is not accepted', { name: 'x', env: 'live', user_id: 'usr_01JD3K8Z6W6J9Q4X1V5N2M7P8R' }, 'user_id'],
    ['key is not accepted', { name: 'x', env: 'live', key: `svc_live_${'a'.repeat(43)}` }, 'key'],
  ];
  for (const [name, body, field] of bad) {
    it(`${name}: 400 validation_error, nothing written`, async () => {
      const ws = await newWorkspace(t);
      const res = await expectNoChange(t, () => req('POST', '/v1/keys', ws.live, body));
      expectValidation(res, { field });
    });
  }
});

describe('POST /v1/keys with Idempotency-Key', () => {
  it('a replay answers the same key record without the plaintext, which is stored nowhere', async () => {
    const ws = await newWorkspace(t);
    const send = () =>
      t.request({
        method: 'POST',
        url: '/v1/keys',
        key: ws.live,
        body: { name: 'Once', env: 'live' },
        headers: { 'idempotency-key': 'create-once' },
      });
    const first = await send();
    expect(first.statusCode, first.body).toBe(201);
    const created = json(first).data;
    expect(created.key).toMatch(/^svc_live_/);
    const replay = await send();
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(json(replay).data).toEqual({ ...created, key: null });
    expect(json(await req('GET', '/v1/keys?limit=100', ws.live)).meta.total).toBe(3);
    const stored = await t.storage.db.selectFrom('idempotency_keys').selectAll().execute();
    expect(JSON.stringify(stored)).not.toContain(created.key.slice(9));
  });
});

describe('who sees which keys', () => {
  async function setup() {
    const ws = await newWorkspace(t);
    const member = await ws.member('member');
    const viewer = await ws.member('viewer');
    const adminKey = await createKey(ws.live, { name: 'admin-made' });
    return { ws, member, viewer, adminKey };
  }
  const ids = (body: { data: { id: string }[] }) => body.data.map((k) => k.id);

  it('an admin lists every key of the workspace; members and viewers their own', async () => {
    const { ws, member, viewer, adminKey } = await setup();
    const all = json(await req('GET', '/v1/keys?limit=100', ws.live));
    expect(all.meta.total).toBe(7); // admin live+test+made, member live+test, viewer live+test
    expect(ids(all)).toContain(adminKey.id);
    const mine = json(await req('GET', '/v1/keys', member.live));
    expect(mine.meta.total).toBe(2);
    expect(mine.data.every((k: { user_id: string }) => k.user_id === member.userId)).toBe(true);
    const viewers = json(await req('GET', '/v1/keys', viewer.live));
    expect(viewers.data.every((k: { user_id: string }) => k.user_id === viewer.userId)).toBe(true);
    expect(
      json(await req('GET', '/v1/keys?env=test', ws.live)).data.every((k: { env: string }) => k.env === 'test'),
    ).toBe(true);
    const page1 = json(await req('GET', '/v1/keys?limit=3', ws.live));
    const page2 = json(await req('GET', `/v1/keys?limit=3&cursor=${page1.meta.next_cursor}`, ws.live));
    expect([...ids(page1), ...ids(page2)]).toEqual(ids(all).slice(0, 6));
  });

  it("another user's key is a 404 to a non-admin, for reading, revoking and rolling; nothing changes", async () => {
    const { member, adminKey } = await setup();
    for (const [method, suffix] of [
      ['GET', ''],
      ['DELETE', ''],
      ['POST', '/roll'],
    ] as const) {
      const res = await expectNoChange(t, () => req(method, `/v1/keys/${adminKey.id}${suffix}`, member.live));
      expectError(res, 404, 'not_found');
    }
    expect(await status(adminKey.key)).toBe(200);
  });

  it('an admin revokes a member’s key; a member revokes their own', async () => {
    const { ws, member } = await setup();
    const own = await createKey(member.live);
    expect((await req('DELETE', `/v1/keys/${own.id}`, member.live)).statusCode).toBe(204);
    expectError(await req('GET', '/v1/users/me', own.key), 401, 'expired_token');
    const other = await createKey(member.live);
    expect((await req('DELETE', `/v1/keys/${other.id}`, ws.live)).statusCode).toBe(204);
    expect(await status(other.key)).toBe(401);
  });

  it('a test key sees test keys only; a live key sees both', async () => {
    const { ws } = await setup();
    const testList = json(await req('GET', '/v1/keys?limit=100', ws.test));
    expect(testList.data.every((k: { env: string }) => k.env === 'test')).toBe(true);
    expect(json(await req('GET', '/v1/keys?env=live', ws.test)).meta.total).toBe(0);
    const liveList = json(await req('GET', '/v1/keys?limit=100', ws.live));
    expect(new Set(liveList.data.map((k: { env: string }) => k.env))).toEqual(new Set(['live', 'test']));
  });

  it.each([
    ['env=prod', 'env'],
    ['limit=101', 'limit'],
    ['user_id=usr_1', 'user_id'],
  ])('GET /v1/keys?%s: 400 validation_error', async (query, field) => {
    const ws = await newWorkspace(t);
    expectValidation(await req('GET', `/v1/keys?${query}`, ws.live), { field });
  });

  it('unknown and malformed ids are 404', async () => {
    const ws = await newWorkspace(t);
    for (const id of ['key_01JD3K8Z6W6J9Q4X1V5N2M7P8R', 'nope', 'usr_01JD3K8Z6W6J9Q4X1V5N2M7P8R']) {
      expectError(await req('GET', `/v1/keys/${id}`, ws.live), 404, 'not_found');
      expectError(await expectNoChange(t, () => req('DELETE', `/v1/keys/${id}`, ws.live)), 404, 'not_found');
    }
  });
});

describe('DELETE /v1/keys/{id}', () => {
  it('revokes at once; the record stays listed as revoked; revoking again changes nothing', async () => {
    const ws = await newWorkspace(t);
    const k = await createKey(ws.live);
    expect(await status(k.key)).toBe(200); // now cached as verified
    const res = await req('DELETE', `/v1/keys/${k.id}`, ws.live);
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expectError(await req('GET', '/v1/users/me', k.key), 401, 'expired_token');
    const got = json(await req('GET', `/v1/keys/${k.id}`, ws.live)).data;
    expect(got).toMatchObject({ status: 'revoked' });
    expect(got.revoked_at).toMatch(/Z$/);
    const again = await expectNoChange(t, () => req('DELETE', `/v1/keys/${k.id}`, ws.live));
    expect(again.statusCode).toBe(204);
  });

  it('a key can revoke itself; that request answers, the next is 401', async () => {
    const ws = await newWorkspace(t);
    const k = await createKey(ws.live);
    expect((await req('DELETE', `/v1/keys/${k.id}`, k.key)).statusCode).toBe(204);
    expect(await status(k.key)).toBe(401);
  });
});

describe('expiry and rolling (injected clock)', () => {
  it('a key past expires_at answers 401 expired_token, also when it was verified just before', async () => {
    const ws = await newWorkspace(t);
    const k = await createKey(ws.live, { expires_at: iso(clock.now() + 60_000) });
    expect(k.expires_at).toBe(iso(Date.parse(k.expires_at as string)));
    expect(await status(k.key)).toBe(200);
    offsetMs += 61_000;
    expectError(await req('GET', '/v1/users/me', k.key), 401, 'expired_token');
    // A write with it is refused too, and changes nothing.
    const write = await expectNoChange(t, () =>
      req('POST', '/v1/resources', k.key, { name: 'late', type: 'standard' }),
    );
    expectError(write, 401, 'expired_token');
    expect(json(await req('GET', `/v1/keys/${k.id}`, ws.live)).data.status).toBe('expired');
  });

  it('roll: a successor with the same name, scopes and owner; the old key works until the overlap ends', async () => {
    const ws = await newWorkspace(t);
    const member = await ws.member('member');
    const old = await createKey(member.live, { name: 'Billing sync', scopes: ['resources:read', 'users:read'] });
    expect(await status(old.key)).toBe(200);
    const res = await req('POST', `/v1/keys/${old.id}/roll`, ws.live, { expire_old_in_s: 3600 });
    expect(res.statusCode, res.body).toBe(201);
    const next = json(res).data;
    expect(next).toMatchObject({
      name: 'Billing sync',
      env: 'live',
      scopes: ['resources:read', 'users:read'],
      user_id: member.userId,
      created_by: ws.adminId,
      status: 'active',
      expires_at: null,
    });
    expect(next.key).toMatch(/^svc_live_/);
    expect(next.id).not.toBe(old.id);
    expect(next.previous_key.id).toBe(old.id);
    // The successor names the key it was rolled from, in every answer; the old key and a new one name none.
    expect(next.rolled_from).toBe(old.id);
    expect(json(await req('GET', `/v1/keys/${next.id}`, ws.live)).data.rolled_from).toBe(old.id);
    expect(json(await req('GET', `/v1/keys/${old.id}`, ws.live)).data.rolled_from).toBeNull();
    expect(Date.parse(next.previous_key.expires_at) - clock.now()).toBeGreaterThan(3590_000);
    expect(json(await req('GET', `/v1/keys/${old.id}`, ws.live)).data).toMatchObject({
      status: 'active',
      expires_at: next.previous_key.expires_at,
    });

    expect(await status(old.key)).toBe(200);
    expect(await status(next.key)).toBe(200);
    offsetMs += 3601_000;
    expectError(await req('GET', '/v1/users/me', old.key), 401, 'expired_token');
    expect(await status(next.key)).toBe(200);
    expect(json(await req('GET', `/v1/keys/${old.id}`, ws.live)).data.status).toBe('expired');
    const expired = await expectNoChange(t, () => req('POST', `/v1/keys/${old.id}/roll`, ws.live));
    expectError(expired, 409, 'key_expired');
  });

  it('expire_old_in_s 0 stops the old key at once; rolling a revoked key is 409 key_revoked', async () => {
    const ws = await newWorkspace(t);
    const old = await createKey(ws.live);
    expect(await status(old.key)).toBe(200);
    const next = json(await req('POST', `/v1/keys/${old.id}/roll`, ws.live, { expire_old_in_s: 0 })).data;
    expect(await status(old.key)).toBe(401);
    expect(await status(next.key)).toBe(200);
    await req('DELETE', `/v1/keys/${next.id}`, ws.live);
    expectError(await expectNoChange(t, () => req('POST', `/v1/keys/${next.id}/roll`, ws.live)), 409, 'key_revoked');
  });

  it('no body means an overlap of one day; a second roll never extends the first one', async () => {
    const ws = await newWorkspace(t);
    const old = await createKey(ws.live);
    const first = json(await req('POST', `/v1/keys/${old.id}/roll`, ws.live, { expire_old_in_s: 60 })).data;
    const second = json(await req('POST', `/v1/keys/${old.id}/roll`, ws.live)).data;
    expect(second.previous_key.expires_at).toBe(first.previous_key.expires_at);
    const fresh = await createKey(ws.live);
    const day = json(await req('POST', `/v1/keys/${fresh.id}/roll`, ws.live)).data;
    const left = Date.parse(day.previous_key.expires_at) - clock.now();
    expect(left).toBeGreaterThan(86_390_000);
    expect(left).toBeLessThanOrEqual(86_400_000);
  });

  it('a restricted key cannot roll a key with scopes it lacks: 403, nothing changed', async () => {
    const ws = await newWorkspace(t);
    const broad = await createKey(ws.live);
    const narrow = await createKey(ws.live, { scopes: ['keys:write'] });
    expectError(
      await expectNoChange(t, () => req('POST', `/v1/keys/${broad.id}/roll`, narrow.key)),
      403,
      'insufficient_scope',
    );
  });

  const bad: [string, unknown, string][] = [
    ['negative', { expire_old_in_s: -1 }, 'expire_old_in_s'],
    ['over 7 days', { expire_old_in_s: 604_801 }, 'expire_old_in_s'],
    ['not an integer', { expire_old_in_s: 0.5 }, 'expire_old_in_s'],
    ['a string', { expire_old_in_s: '60' }, 'expire_old_in_s'],
    ['unknown field', { name: 'renamed' }, 'name'],
  ];
  for (const [name, body, field] of bad) {
    it(`roll with ${name}: 400 validation_error, nothing changed`, async () => {
      const ws = await newWorkspace(t);
      const k = await createKey(ws.live);
      const res = await expectNoChange(t, () => req('POST', `/v1/keys/${k.id}/roll`, ws.live, body));
      expectValidation(res, { field });
    });
  }
});

describe('OpenAPI', () => {
  it('documents the key routes with operation ids and the ApiKey schema without any plaintext', async () => {
    const doc = json(await t.request({ method: 'GET', url: '/v1/openapi.json' }));
    expect(doc.paths['/v1/keys'].get.operationId).toBe('listKeys');
    expect(doc.paths['/v1/keys'].post.responses['201']).toBeDefined();
    expect(doc.paths['/v1/keys/{id}/roll'].post.operationId).toBe('rollKey');
    expect(Object.keys(doc.components.schemas.ApiKey.properties)).not.toContain('key');
  });
});
