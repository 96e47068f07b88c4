// Backends: both — the erasure's SQL runs on each database, and what is left is read from SQLite's own files (and
// the WAL) or from pg_dump
// Tier: full — runs `wsvc users erase` and `wsvc audit verify` as child processes and pg_dump
// docs/data-lifecycle.md#erasing-a-person: `wsvc users erase EMAIL` removes the person's email, name, IP addresses and
// user agents from every workspace, session, notification, kept email and audit entry; the audit chain still
// verifies; the other members are untouched; a second run finds nothing.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { asCli, json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { ORIGIN, signInWithLink } from '../helpers/console.js';
import { databaseUrlOf, runWsvc } from '../helpers/processes.js';
import { openTestStorage } from '../helpers/storage.js';

const EMAIL = 'erin.erasable@example.test';
const NAME = 'Erin Qzerasable';
const RENAMED = 'Erin Qzrenamed';
const AGENT = 'ErinBrowserQz/7.1';

let t: TestApp;
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let url: string;
beforeAll(async () => {
  storage = await openTestStorage();
  t = await startTestApp({ storage });
  url = databaseUrlOf(storage);
});
afterAll(async () => {
  await t.close();
  await storage.close();
});

/** Everything the database keeps, as text: SQLite's file and WAL byte for byte, or PostgreSQL's dump of the schema. */
async function everything(): Promise<string> {
  if (storage.schema) {
    const pgUrl = storage.url;
    const { stdout } = await promisify(execFile)('pg_dump', ['--schema', storage.schema, pgUrl], {
      maxBuffer: 256 * 1024 * 1024,
    });
    return stdout;
  }
  const path = storage.url.slice('sqlite:'.length);
  const parts = await Promise.all(['', '-wal'].map((s) => readFile(path + s).catch(() => Buffer.alloc(0))));
  return Buffer.concat(parts).toString('latin1');
}

describe('wsvc users erase', { timeout: 240_000 }, () => {
  it('erases a person from two workspaces, sessions, notifications, mailbox and audit log; the chain verifies; others untouched', async () => {
    const a = await newWorkspace(t);
    const b = await newWorkspace(t);
    const cli = asCli(t.services);
    const inA = await t.services.members.invite(cli, a.id, { email: EMAIL, role: 'member', name: NAME });
    const inB = await t.services.members.invite(cli, b.id, { email: EMAIL, role: 'admin', name: NAME });
    // The invite emails, kept in the local mailbox.
    await t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')));
    // A console session, then a change of their own through their key: an audit entry with their ip and user agent.
    await signInWithLink(t, inA.invite_url);
    const key = await a.key(inA.user.id, 'live');
    const renamed = await t.request({
      method: 'PATCH',
      url: '/v1/users/me',
      key: key.key,
      body: { name: RENAMED },
      headers: { 'user-agent': AGENT },
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(json(renamed).data.email).toBe(EMAIL);
    const before = await everything();
    for (const s of [EMAIL, NAME, RENAMED, AGENT]) expect(before).toContain(s);
    const verified = await runWsvc(url, ['audit', 'verify']);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);

    // Whatever the case it is typed in.
    const out = await runWsvc(url, ['users', 'erase', EMAIL.toUpperCase(), '--json']);
    expect(out.code, out.stderr).toBe(0);
    const report = JSON.parse(out.stdout);
    expect(report.users.map((u: { id: string }) => u.id).sort()).toEqual([inA.user.id, inB.user.id].sort());
    expect(report.changed).toMatchObject({ 'users.email': 2, 'console_credentials.email': 1, 'mailbox.to_address': 2 });
    expect(report.changed['console_sessions.email']).toBeGreaterThanOrEqual(1);
    expect(report.audit_entries).toBeGreaterThan(0);
    expect(report.left_without_admin).toEqual([]);

    const after = await everything();
    for (const s of [EMAIL, NAME, RENAMED, AGENT]) expect(after.includes(s), `${s} left`).toBe(false);
    const again = await runWsvc(url, ['audit', 'verify']);
    expect(again.code, again.stdout + again.stderr).toBe(0);

    // Their rows stay, removed, reading [erased]; the audit actor keeps its id.
    const users = await t.storage.db
      .selectFrom('users')
      .selectAll()
      .where('id', 'in', [inA.user.id, inB.user.id])
      .execute();
    for (const u of users) expect(u).toMatchObject({ email: '[erased]', name: '[erased]' });
    for (const u of users) expect(u.removed_at).not.toBeNull();
    const theirs = await t.storage.db
      .selectFrom('audit_entries')
      .selectAll()
      .where('actor_id', '=', inA.user.id)
      .execute();
    expect(theirs.length).toBeGreaterThan(0);
    for (const e of theirs)
      expect(e).toMatchObject({ actor_name: '[erased]', ip: null, user_agent: null, personal_salt: null });
    const erased = await t.storage.db
      .selectFrom('audit_entries')
      .selectAll()
      .where('action', '=', 'user.erased')
      .execute();
    expect(erased.map((e) => [e.workspace_id, e.target_id]).sort()).toEqual(
      [
        [a.id, inA.user.id],
        [b.id, inB.user.id],
      ].sort(),
    );

    // The other members are untouched.
    const admins = await t.storage.db
      .selectFrom('users')
      .selectAll()
      .where('id', 'in', [a.adminId, b.adminId])
      .execute();
    for (const u of admins) {
      expect(u.email).toMatch(/^admin\d+@example\.test$/);
      expect(u.removed_at).toBeNull();
      expect(after).toContain(u.email);
    }
    expect((await t.request({ method: 'GET', url: '/v1/users/me', key: a.live })).statusCode).toBe(200);
    // Their key stops at once where this process hears of the CLI's write (SQLite's data_version; on PostgreSQL the
    // CLI child would announce it through the test app's Redis key prefix, which it is not given here).
    if (!storage.schema) {
      expect((await t.request({ method: 'GET', url: '/v1/users/me', key: key.key })).statusCode).toBe(401);
    }

    // Idempotent: nothing is left to erase, nothing more is recorded.
    const second = await runWsvc(url, ['users', 'erase', EMAIL]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/nothing to erase/);
    const count = await t.storage.db
      .selectFrom('audit_entries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('action', '=', 'user.erased')
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(2);
  });

  it("an operator's erasure of a workspace's only admin is done, and says the workspace has no admin left", async () => {
    const c = await newWorkspace(t, 'Gamma Qz');
    const email = 'olga.only@example.test';
    const cli = asCli(t.services);
    const only = await t.services.members.invite(cli, c.id, { email, role: 'admin' });
    await t.services.members.removeMember(cli, c.adminId);
    const out = await runWsvc(url, ['users', 'erase', email]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain(`workspace "Gamma Qz" (${c.id}) has no admin left`);
    expect(out.stdout).toContain('wsvc users set-role <usr_id> --role admin');
    const admins = await t.storage.db
      .selectFrom('users')
      .select('id')
      .where('workspace_id', '=', c.id)
      .where('role', '=', 'admin')
      .where('removed_at', 'is', null)
      .execute();
    expect(admins).toEqual([]);
    const row = await t.storage.db.selectFrom('users').selectAll().where('id', '=', only.user.id).executeTakeFirst();
    expect(row).toMatchObject({ email: '[erased]' });
  });

  it('deletes my own account from the console, refused with 409 naming the workspace while I am its last admin', async () => {
    const a = await newWorkspace(t, 'Alpha Qz');
    const email = 'dana.self@example.test';
    const cli = asCli(t.services);
    const member = await t.services.members.invite(cli, a.id, { email, role: 'member', name: 'Dana Qzself' });
    const own = await t.services.workspaces.create(cli, { name: 'Dana Solo Qz', adminEmail: email });
    const me = await signInWithLink(t, member.invite_url);

    const anonymous = await t.request({
      method: 'POST',
      url: '/console/api/account/delete',
      body: { email },
      headers: { origin: ORIGIN },
    });
    expect(anonymous.statusCode).toBe(401);
    const wrong = await me.call({
      method: 'POST',
      url: '/console/api/account/delete',
      body: { email: 'x@example.test' },
    });
    expect(wrong.statusCode, wrong.body).toBe(400);
    const refused = await me.call({ method: 'POST', url: '/console/api/account/delete', body: { email } });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(json(refused).error.code).toBe('last_admin');
    expect(json(refused).error.message).toContain('Dana Solo Qz');
    expect(json(refused).error.message).toContain(own.workspace.id);
    const still = await t.storage.db.selectFrom('users').selectAll().where('email', '=', email).execute();
    expect(still).toHaveLength(2);

    // Another admin in their workspace: now they may go.
    await t.services.users.create(cli, {
      workspaceId: own.workspace.id,
      email: 'second.admin@example.test',
      role: 'admin',
    });
    const gone = await me.call({ method: 'POST', url: '/console/api/account/delete', body: { email } });
    expect(gone.statusCode, gone.body).toBe(204);
    expect(await t.storage.db.selectFrom('users').selectAll().where('email', '=', email).execute()).toEqual([]);
    const session = await me.call({ method: 'GET', url: '/console/api/session' });
    expect(session.statusCode).toBe(401);
    const checks = await t.services.audit.verify();
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    const entries = await t.storage.db
      .selectFrom('audit_entries')
      .selectAll()
      .where('action', '=', 'user.erased')
      .where('workspace_id', 'in', [a.id, own.workspace.id])
      .execute();
    expect(entries).toHaveLength(2);
    for (const e of entries)
      expect(e).toMatchObject({ actor_type: 'user', actor_name: '[erased]', ip: null, user_agent: null });
  });
});
