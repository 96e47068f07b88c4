import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli, json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import { expectNoChange } from '../helpers/snapshot.js';

// Backends: both — profiles, overlays, removals and time zone names are stored and read on each database
// Tier: quick

let t: TestApp;
let now = Date.parse('2026-11-22T10:00:00.000Z');
beforeAll(async () => {
  t = await startTestApp({ clock: { now: () => now++ } });
});
afterAll(() => t.close());

const me = (key: string) => t.request({ method: 'GET', url: '/v1/users/me', key });
const patch = (key: string, body: unknown) => t.request({ method: 'PATCH', url: '/v1/users/me', key, body });

describe('GET /users/me (spec, docs/api.md#users)', () => {
  it('returns every field of the spec plus timezone and name, null until set', async () => {
    const ws = await newWorkspace(t);
    const res = await me(ws.live);
    expect(res.statusCode).toBe(200);
    const u = json(res).data;
    expect(Object.keys(u).sort()).toEqual(
      ['created_at', 'email', 'id', 'name', 'role', 'timezone', 'updated_at', 'workspace_id'].sort(),
    );
    expect(u).toMatchObject({ id: ws.adminId, role: 'admin', workspace_id: ws.id, name: null, timezone: null });
    expect(u.id).toMatch(/^usr_[0-9A-Z]{26}$/);
    expect(u.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it("a member's key reads the member's own profile", async () => {
    const ws = await newWorkspace(t);
    const m = await ws.member('viewer');
    expect(json(await me(m.live)).data).toMatchObject({ id: m.userId, role: 'viewer' });
  });
});

describe('PATCH /users/me (spec, docs/api.md#validation, docs/api.md#validation, docs/api.md#users)', () => {
  it('changes name and timezone; omitted fields stay; email, role, created_at never change', async () => {
    const ws = await newWorkspace(t);
    const before = json(await me(ws.live)).data;
    const r1 = await patch(ws.live, { name: 'Ada' });
    expect(r1.statusCode).toBe(200);
    const u1 = json(r1).data;
    expect(u1).toMatchObject({ name: 'Ada', timezone: null, email: before.email, role: 'admin' });
    expect(u1.created_at).toBe(before.created_at);
    expect(u1.updated_at > before.updated_at).toBe(true);
    const u2 = json(await patch(ws.live, { timezone: 'America/Argentina/Buenos_Aires' })).data;
    expect(u2).toMatchObject({ name: 'Ada', timezone: 'America/Argentina/Buenos_Aires' });
    expect(u2.updated_at > u1.updated_at).toBe(true);
    // The response is the same shape and content as GET /users/me.
    expect(json(await me(ws.live)).data).toEqual(u2);
  });

  it('PATCH {} is a no-op that returns the user unchanged (docs/api.md#users)', async () => {
    const ws = await newWorkspace(t);
    await patch(ws.live, { name: 'Grace' });
    const before = json(await me(ws.live)).data;
    const res = await expectNoChange(t, () => patch(ws.live, {}));
    expect(res.statusCode).toBe(200);
    expect(json(res).data).toEqual(before);
  });

  it('accepts IANA names the database knows (docs/api.md#users), stored exactly as sent', async () => {
    const ws = await newWorkspace(t);
    for (const tz of ['Europe/Paris', 'UTC', 'America/Argentina/Buenos_Aires', 'Asia/Kolkata', 'Etc/GMT+5']) {
      const res = await patch(ws.live, { timezone: tz });
      expect(res.statusCode, tz).toBe(200);
      expect(json(res).data.timezone).toBe(tz);
    }
  });

  it('name limits count code points (docs/api.md#validation): 100 emoji ok, 101 refused', async () => {
    const ws = await newWorkspace(t);
    const ok = await patch(ws.live, { name: '😀'.repeat(100) });
    expect(ok.statusCode).toBe(200);
    expect(json(ok).data.name).toBe('😀'.repeat(100));
    expectValidation(await expectNoChange(t, () => patch(ws.live, { name: '😀'.repeat(101) })), {
      field: 'name',
      issue: 'too_long',
    });
  });

  const bad: [string, unknown, { field: string; issue?: string }][] = [
    [
      'email is read-only (docs/api.md#validation)',
      { email: 'new@example.test' },
      { field: 'email', issue: 'unknown_field' },
    ],
    ['role is read-only (docs/api.md#validation)', { role: 'viewer' }, { field: 'role', issue: 'unknown_field' }],
    ['id is read-only', { id: 'usr_x' }, { field: 'id', issue: 'unknown_field' }],
    ['workspace_id is read-only', { workspace_id: 'ws_x' }, { field: 'workspace_id', issue: 'unknown_field' }],
    [
      'updated_at is read-only',
      { updated_at: '2020-01-01T00:00:00.000Z' },
      { field: 'updated_at', issue: 'unknown_field' },
    ],
    ['unknown field', { nickname: 'x' }, { field: 'nickname', issue: 'unknown_field' }],
    ['name empty', { name: '' }, { field: 'name', issue: 'too_short' }],
    ['name 101 chars', { name: 'x'.repeat(101) }, { field: 'name', issue: 'too_long' }],
    ['name a number', { name: 5 }, { field: 'name', issue: 'invalid_type' }],
    ['name null', { name: null }, { field: 'name', issue: 'invalid_type' }],
    ['timezone unknown', { timezone: 'Mars/Olympus_Mons' }, { field: 'timezone', issue: 'invalid_value' }],
    ['timezone wrong case', { timezone: 'europe/paris' }, { field: 'timezone', issue: 'invalid_value' }],
    ['timezone an offset', { timezone: '+02:00' }, { field: 'timezone', issue: 'invalid_value' }],
    ['timezone GMT+5', { timezone: 'GMT+5' }, { field: 'timezone', issue: 'invalid_value' }],
    ['timezone empty', { timezone: '' }, { field: 'timezone', issue: 'too_short' }],
    ['timezone with a path trick', { timezone: '../etc/passwd' }, { field: 'timezone', issue: 'invalid_value' }],
    ['timezone null', { timezone: null }, { field: 'timezone', issue: 'invalid_type' }],
    ['timezone a number', { timezone: 2 }, { field: 'timezone', issue: 'invalid_type' }],
    ['body an array', [], { field: 'body', issue: 'invalid_type' }],
  ];
  for (const [label, body, problem] of bad) {
    it(`400 validation_error: ${label}, nothing changed`, async () => {
      const ws = await newWorkspace(t);
      expectValidation(await expectNoChange(t, () => patch(ws.live, body)), problem);
    });
  }
});

describe('test-mode profile overlay (docs/api.md#environments)', () => {
  it("a test key's PATCH writes an overlay that only test keys read; the live profile stays", async () => {
    const ws = await newWorkspace(t);
    await patch(ws.live, { name: 'Live Name', timezone: 'Europe/Paris' });
    const live = json(await me(ws.live)).data;

    const res = await patch(ws.test, { name: 'Sandbox Name' });
    expect(res.statusCode).toBe(200);
    expect(json(res).data).toMatchObject({ name: 'Sandbox Name', timezone: 'Europe/Paris' });
    expect(json(await me(ws.test)).data).toMatchObject({ name: 'Sandbox Name', timezone: 'Europe/Paris' });
    // Live reads are untouched, byte for byte.
    expect(json(await me(ws.live)).data).toEqual(live);

    await patch(ws.test, { timezone: 'Asia/Tokyo' });
    expect(json(await me(ws.test)).data).toMatchObject({ name: 'Sandbox Name', timezone: 'Asia/Tokyo' });
    expect(json(await me(ws.live)).data).toEqual(live);

    // The member list follows the same rule.
    const liveList = json(await t.request({ method: 'GET', url: '/v1/users', key: ws.live })).data;
    const testList = json(await t.request({ method: 'GET', url: '/v1/users', key: ws.test })).data;
    expect(liveList.find((u: { id: string }) => u.id === ws.adminId)).toEqual(live);
    expect(testList.find((u: { id: string }) => u.id === ws.adminId)).toMatchObject({
      name: 'Sandbox Name',
      timezone: 'Asia/Tokyo',
    });

    // A later live change shows through where the overlay has no value of its own.
    await patch(ws.live, { name: 'Live Name 2' });
    expect(json(await me(ws.test)).data.name).toBe('Sandbox Name');
  });

  it('a test key on a user without an overlay reads the live profile', async () => {
    const ws = await newWorkspace(t);
    await patch(ws.live, { name: 'Only Live' });
    expect(json(await me(ws.test)).data).toEqual(json(await me(ws.live)).data);
  });
});

describe('GET /users (spec, docs/api.md#lists-and-paging)', () => {
  let ws: TestWorkspace;
  const ids: string[] = [];
  beforeAll(async () => {
    ws = await newWorkspace(t);
    ids.push(ws.adminId);
    for (let i = 0; i < 6; i++) ids.push((await ws.member(i % 2 ? 'member' : 'viewer')).userId);
    // Another workspace's members never show.
    const other = await newWorkspace(t);
    await other.member('member');
  });

  it('lists only this workspace, oldest first, with meta', async () => {
    const res = await t.request({ method: 'GET', url: '/v1/users', key: ws.live });
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body.data.map((u: { id: string }) => u.id)).toEqual(ids);
    expect(body.meta).toEqual({ total: 7, limit: 20, offset: 0, next_cursor: null });
  });

  it('removed users are not members any more', async () => {
    const w = await newWorkspace(t);
    const m = await w.member('member');
    await t.services.users.remove(asCli(t.services), m.userId);
    const body = json(await t.request({ method: 'GET', url: '/v1/users', key: w.live }));
    expect(body.data.map((u: { id: string }) => u.id)).toEqual([w.adminId]);
    expect(body.meta.total).toBe(1);
  });

  it("a removed user's email can be added again; the old user's keys stay 401 expired_token (docs/api.md#keys-scopes-and-roles)", async () => {
    const w = await newWorkspace(t);
    const email = `back${Date.now()}@example.test`;
    const old = await t.services.users.create(asCli(t.services), { workspaceId: w.id, email, role: 'member' });
    const oldKey = await w.key(old.id, 'live');
    await t.services.users.remove(asCli(t.services), old.id);

    const again = await t.services.users.create(asCli(t.services), { workspaceId: w.id, email, role: 'viewer' });
    expect(again).toMatchObject({ email, role: 'viewer', workspace_id: w.id });
    expect(again.id).not.toBe(old.id);
    expectError(await me(oldKey.key), 401, 'expired_token');
    const newKey = await w.key(again.id, 'live');
    expect(json(await me(newKey.key)).data).toMatchObject({ id: again.id, email });
    const list = json(await t.request({ method: 'GET', url: '/v1/users', key: w.live })).data;
    expect(list.map((u: { id: string }) => u.id)).toEqual([w.adminId, again.id]);

    // While that email belongs to a current member, adding it again is refused and writes nothing.
    const dup = await expectNoChange(t, () =>
      t.services.users.create(asCli(t.services), { workspaceId: w.id, email, role: 'member' }).catch((e: unknown) => e),
    );
    expect(dup).toMatchObject({ code: 'validation_error', details: [{ field: 'email', issue: 'taken' }] });
  });

  it('demoting a user narrows their keys at once (docs/api.md#keys-scopes-and-roles)', async () => {
    const w = await newWorkspace(t);
    const m = await w.member('member');
    const create = () =>
      t.request({ method: 'POST', url: '/v1/resources', key: m.live, body: { name: 'x', type: 'standard' } });
    expect((await create()).statusCode).toBe(201);
    await t.services.users.setRole(asCli(t.services), m.userId, 'viewer');
    expectError(await expectNoChange(t, create), 403, 'insufficient_scope');
    await t.services.users.setRole(asCli(t.services), m.userId, 'member');
    expect((await create()).statusCode).toBe(201);
  });
});
