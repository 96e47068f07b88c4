import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { asCli, json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { ORIGIN, PASSWORD, signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { mailTo, type Smtp, startSmtp } from '../helpers/smtp.js';

// Backends: both — exactly one notification per change, none when its transaction rolls back
// Tier: full — console sign-ins over HTTP (each a password hash: scrypt, at the suite's lower cost of vitest.config.ts), for each security email it triggers over SMTP
// Security notifications (docs/notifications.md#security-notifications): each change writes exactly
// one notification per recipient in its own transaction, and none when it fails or rolls back.
// Through the real HTTP routes (API keys and console session), the services the CLI calls, a real
// SMTP server on loopback for the email, and an injected clock.

// Console sign-ins and password changes hash with scrypt (at the suite's lower cost, vitest.config.ts; several per test here): on a loaded 2-core machine that outgrows the default 30 s.
vi.setConfig({ testTimeout: 120_000 });

let nowMs = Date.parse('2026-03-28T23:30:00.000Z');
const clock = { now: () => nowMs };
let smtp: Smtp;
let t: TestApp;
beforeAll(async () => {
  smtp = await startSmtp();
  t = await startTestApp({
    clock,
    config: { SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, PUBLIC_URL: ORIGIN },
  });
});
afterAll(async () => {
  await t.close();
  await smtp.close();
});

/** The workspace's notifications of one type, as `{user_id: count}`. */
async function recipients(ws: string, type: string): Promise<Record<string, number>> {
  const rows = await t.storage.db
    .selectFrom('notifications')
    .select(['user_id', 'category'])
    .where('workspace_id', '=', ws)
    .where('type', '=', type as never)
    .execute();
  const out: Record<string, number> = {};
  for (const r of rows) {
    expect(r.category).toBe('security');
    out[r.user_id] = (out[r.user_id] ?? 0) + 1;
  }
  return out;
}
const total = async (ws: string) =>
  (await t.storage.db.selectFrom('notifications').select('id').where('workspace_id', '=', ws).execute()).length;

/** A workspace with admins A (its creator) and B and a member M, each with live keys. */
async function setup(): Promise<{
  ws: TestWorkspace;
  b: Awaited<ReturnType<TestWorkspace['member']>>;
  m: Awaited<ReturnType<TestWorkspace['member']>>;
}> {
  const ws = await newWorkspace(t);
  const b = await ws.member('admin');
  const m = await ws.member('member');
  return { ws, b, m };
}

describe('security notifications (always on)', () => {
  it('a new workspace tells no one; adding members tells the admins there are at that moment', async () => {
    const { ws, b, m } = await setup();
    // B was added when A was the only admin; M when A and B were.
    expect(await recipients(ws.id, 'member.added')).toEqual({ [ws.adminId]: 2, [b.userId]: 1 });
    // B's keys: B and the admins (B once, not twice); M's keys: M and both admins.
    expect(await recipients(ws.id, 'key.created')).toEqual({ [ws.adminId]: 4, [b.userId]: 4, [m.userId]: 2 });
  });

  it('key created, revoked and rolled over /v1/keys: the owner and each admin once', async () => {
    const { ws, b, m } = await setup();
    const before = await recipients(ws.id, 'key.created');
    const created = await t.request({
      method: 'POST',
      url: '/v1/keys',
      key: m.live,
      body: { name: 'CI', env: 'live' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const after = await recipients(ws.id, 'key.created');
    expect(after[m.userId]).toBe((before[m.userId] ?? 0) + 1);
    expect(after[ws.adminId]).toBe((before[ws.adminId] ?? 0) + 1);
    expect(after[b.userId]).toBe((before[b.userId] ?? 0) + 1);

    const id = json(created).data.id as string;
    const rolled = await t.request({
      method: 'POST',
      url: `/v1/keys/${id}/roll`,
      key: m.live,
      body: { expire_old_in_s: 3600 },
    });
    expect(rolled.statusCode, rolled.body).toBe(201);
    expect(await recipients(ws.id, 'key.rolled')).toEqual({ [m.userId]: 1, [ws.adminId]: 1, [b.userId]: 1 });
    // A roll is not also a creation.
    expect(await recipients(ws.id, 'key.created')).toEqual(after);

    const successor = json(rolled).data.id as string;
    const revoked = await t.request({ method: 'DELETE', url: `/v1/keys/${successor}`, key: ws.live });
    expect(revoked.statusCode).toBe(204);
    expect(await recipients(ws.id, 'key.revoked')).toEqual({ [m.userId]: 1, [ws.adminId]: 1, [b.userId]: 1 });
    // Revoking it again changes nothing and tells no one.
    expect((await t.request({ method: 'DELETE', url: `/v1/keys/${successor}`, key: ws.live })).statusCode).toBe(204);
    // The CLI's revocation (the same service `wsvc keys revoke` calls).
    await t.services.keyRegistry.revoke(asCli(t.services), m.liveKeyId);
    expect(await recipients(ws.id, 'key.revoked')).toEqual({ [m.userId]: 2, [ws.adminId]: 2, [b.userId]: 2 });
    await t.services.keyRegistry.revoke(asCli(t.services), m.liveKeyId);
    expect(await recipients(ws.id, 'key.revoked')).toEqual({ [m.userId]: 2, [ws.adminId]: 2, [b.userId]: 2 });
  });

  it('refused key changes tell no one', async () => {
    const { ws, b } = await setup();
    const n = await total(ws.id);
    const badScope = await t.request({
      method: 'POST',
      url: '/v1/keys',
      key: b.live,
      body: { name: 'x', env: 'live', scopes: ['nope:read'] },
    });
    expect(badScope.statusCode).toBe(400);
    const revokedKey = await ws.key(b.userId, 'live');
    const afterCreate = await total(ws.id);
    await t.services.keyRegistry.revoke(asCli(t.services), revokedKey.id);
    const afterRevoke = await total(ws.id);
    const roll = await t.request({
      method: 'POST',
      url: `/v1/keys/${revokedKey.id}/roll`,
      key: b.live,
      body: { expire_old_in_s: 0 },
    });
    expectError(roll, 409, 'key_revoked');
    expectError(await t.request({ method: 'DELETE', url: '/v1/keys/key_nope', key: b.live }), 404, 'not_found');
    expect(await total(ws.id)).toBe(afterRevoke);
    expect(afterCreate).toBe(n + 2); // the key made by the test helper: B (owner and admin, once) and A
    expect(afterRevoke).toBe(afterCreate + 2);
  });

  it('a change whose transaction rolls back leaves no notification', async () => {
    const { ws, b } = await setup();
    const k = await ws.key(b.userId, 'live');
    const n = await total(ws.id);
    const boom = new Error('rolled back');
    await expect(
      t.services.uow.as(systemActor('cli')).run(
        async (c) => {
          await t.services.users.create(c.unit, { workspaceId: ws.id, email: 'gone@example.test', role: 'viewer' });
          await t.services.keyRegistry.create(c.unit, { userId: b.userId, env: 'test', name: 'gone' });
          await t.services.users.setRole(c.unit, b.userId, 'member');
          await t.services.keyRegistry.revoke(c.unit, k.id);
          throw boom;
        },
        { changesKeys: true },
      ),
    ).rejects.toBe(boom);
    expect(await total(ws.id)).toBe(n);
    expect((await t.services.users.row(t.storage.db, b.userId))?.role).toBe('admin');
  });

  it('members over the console: added, role changed, removed; password changed; with the email', async () => {
    // Just after the change to summer time in Berlin (01:00 UTC, 29 March).
    nowMs = Date.parse('2026-03-29T01:30:00.000Z');
    const ws = await newWorkspace(t);
    const admin = await signInWithLink(
      t,
      (
        await t.services.consoleAuth.makeLink(
          t.services.uow.as(systemActor('cli')),
          'set_password',
          (await t.services.users.row(t.storage.db, ws.adminId))?.email ?? '',
          {},
        )
      ).url,
    );
    const tz = await t.request({
      method: 'PATCH',
      url: '/v1/users/me',
      key: ws.live,
      body: { timezone: 'Europe/Berlin' },
    });
    expect(tz.statusCode).toBe(200);
    const invited = await admin.call({
      method: 'POST',
      url: '/console/api/members',
      ws: ws.id,
      body: { email: 'sec.member@example.test', role: 'viewer' },
    });
    expect(invited.statusCode, invited.body).toBe(201);
    const memberId = json(invited).data.user_id as string;
    expect(await recipients(ws.id, 'member.added')).toEqual({ [ws.adminId]: 1 });

    const same = await admin.call({
      method: 'PATCH',
      url: `/console/api/members/${memberId}`,
      ws: ws.id,
      body: { role: 'viewer' },
    });
    expect(same.statusCode).toBe(200);
    expect(await recipients(ws.id, 'member.role_changed')).toEqual({});
    const bad = await admin.call({
      method: 'PATCH',
      url: `/console/api/members/${memberId}`,
      ws: ws.id,
      body: { role: 'owner' },
    });
    expect(bad.statusCode).toBe(400);
    const role = await admin.call({
      method: 'PATCH',
      url: `/console/api/members/${memberId}`,
      ws: ws.id,
      body: { role: 'member' },
    });
    expect(role.statusCode, role.body).toBe(200);
    expect(await recipients(ws.id, 'member.role_changed')).toEqual({ [ws.adminId]: 1, [memberId]: 1 });

    const removed = await admin.call({ method: 'DELETE', url: `/console/api/members/${memberId}`, ws: ws.id });
    expect(removed.statusCode).toBe(204);
    expect(await recipients(ws.id, 'member.removed')).toEqual({ [ws.adminId]: 1 });
    const again = await admin.call({ method: 'DELETE', url: `/console/api/members/${memberId}`, ws: ws.id });
    expect(again.statusCode).toBe(404);
    expect(await recipients(ws.id, 'member.removed')).toEqual({ [ws.adminId]: 1 });

    const wrong = await admin.call({
      method: 'POST',
      url: '/console/api/password/change',
      body: { current_password: 'not the password', new_password: 'another strong passphrase' },
    });
    expect(wrong.statusCode).toBe(400);
    expect(await recipients(ws.id, 'password.changed')).toEqual({});
    const changed = await admin.call({
      method: 'POST',
      url: '/console/api/password/change',
      body: { current_password: PASSWORD, new_password: 'another strong passphrase' },
    });
    expect(changed.statusCode, changed.body).toBe(204);
    expect(await recipients(ws.id, 'password.changed')).toEqual({ [ws.adminId]: 1 });

    // The emails: the admin's, in Europe/Berlin with UTC beside.
    await t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')));
    const email = (await t.services.users.row(t.storage.db, ws.adminId))?.email ?? '';
    const subjects = mailTo(smtp, email).map((m) => m.subject);
    expect(subjects).toEqual([
      'Member added: sec.member@example.test (viewer)',
      'Role changed: sec.member@example.test is now member',
      'Member removed: sec.member@example.test',
      'Your password was changed',
    ]);
    const roleMail = mailTo(smtp, email)[1];
    expect(roleMail?.text).toContain(
      'The role of sec.member@example.test changed from viewer to member at 29 Mar 2026, 03:30 CEST (Europe/Berlin) · 2026-03-29 01:30 UTC.',
    );
    expect(roleMail?.text).toContain(`${ORIGIN}/console/w/${ws.id}/live/settings/members`);
    expect(roleMail?.html).toContain('cannot be turned off');
    // The member was removed before the worker ran: their invite and role change are skipped.
    expect(mailTo(smtp, 'sec.member@example.test')).toEqual([]);
  });
});
