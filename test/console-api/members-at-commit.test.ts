import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SessionPrincipal } from '../../src/kernel/principal.js';
import { asCli, startTestApp, type TestApp } from '../helpers/app.js';
import { ORIGIN, signInWithLink } from '../helpers/console.js';

// Backends: both — the re-check at commit reads the session and the admin's role inside each write's transaction
// Tier: quick — one sign-in (one password hash) per test, a few seconds
vi.setConfig({ testTimeout: 120_000 });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { PUBLIC_URL: ORIGIN } });
});
afterAll(() => t.close());

let n = 0;
/**
 * An admin signed in to the console, their principal resolved as a request already past its authentication (and
 * its requireAdmin) has it, a member to change and a second admin to demote them.
 */
async function inFlight() {
  const email = `mac${++n}.${Date.now()}@example.test`;
  const out = await t.services.workspaces.create(asCli(t.services), { name: `At commit ${n}`, adminEmail: email });
  const ws = out.workspace.id;
  const client = await signInWithLink(t, out.set_password_url);
  const open = await t.services.consoleAuth.sessionOf(client.cookie.split('=')[1]);
  if (!open) throw new Error('no session');
  const principal: SessionPrincipal = await t.services.consoleAuth.principalFor(open.session, ws, 'live');
  expect(principal.role).toBe('admin');
  const member = await t.services.users.create(asCli(t.services), {
    workspaceId: ws,
    email: `m.${email}`,
    role: 'member',
  });
  const other = await t.services.users.create(asCli(t.services), {
    workspaceId: ws,
    email: `a.${email}`,
    role: 'admin',
  });
  return { ws, principal, member, other, open };
}

async function unchanged(ws: string, memberId: string, invited: string) {
  const row = await t.storage.db.selectFrom('users').selectAll().where('id', '=', memberId).executeTakeFirstOrThrow();
  expect(row).toMatchObject({ role: 'member', removed_at: null });
  const users = await t.storage.db.selectFrom('users').select('id').where('workspace_id', '=', ws).execute();
  expect(users).toHaveLength(3); // the admin, the member, the other admin: no invited user
  const inv = await t.storage.db.selectFrom('users').select('id').where('email', '=', invited).execute();
  expect(inv).toEqual([]);
  const links = await t.storage.db.selectFrom('console_links').select('digest').where('email', '=', invited).execute();
  expect(links).toEqual([]);
}

describe("the console's member changes and invites re-check their admin at commit", () => {
  it('an admin demoted while the change runs changes nothing: role change, removal and invite answer 403', async () => {
    const { ws, principal, member, other } = await inFlight();
    // Another admin demotes them after their requests passed requireAdmin, before their changes commit.
    await t.services.users.setRole(asCli(t.services), principal.userId, 'member');
    expect(other.role).toBe('admin');
    const invited = `new.${member.email}`;
    const forbidden = { statusCode: 403, code: 'insufficient_scope' };
    await expect(t.services.members.setRole(t.services.uow.as(principal), member.id, 'viewer')).rejects.toMatchObject(
      forbidden,
    );
    await expect(t.services.members.remove(t.services.uow.as(principal), member.id)).rejects.toMatchObject(forbidden);
    await expect(
      t.services.members.inviteAs(t.services.uow.as(principal), { email: invited, role: 'viewer' }),
    ).rejects.toMatchObject(forbidden);
    await unchanged(ws, member.id, invited);
  });

  it('an admin signed out while the change runs changes nothing: 401 unauthenticated', async () => {
    const { ws, principal, member, open } = await inFlight();
    await t.services.consoleAuth.signOut(open.session);
    const invited = `new.${member.email}`;
    const ended = { statusCode: 401, code: 'unauthenticated' };
    await expect(t.services.members.setRole(t.services.uow.as(principal), member.id, 'viewer')).rejects.toMatchObject(
      ended,
    );
    await expect(t.services.members.remove(t.services.uow.as(principal), member.id)).rejects.toMatchObject(ended);
    await expect(
      t.services.members.inviteAs(t.services.uow.as(principal), { email: invited, role: 'viewer' }),
    ).rejects.toMatchObject(ended);
    await unchanged(ws, member.id, invited);
  });

  it('an admin still an admin at commit changes members, and may change their own membership', async () => {
    const { principal, member } = await inFlight();
    expect((await t.services.members.setRole(t.services.uow.as(principal), member.id, 'viewer')).role).toBe('viewer');
    const out = await t.services.members.inviteAs(t.services.uow.as(principal), {
      email: `new.${member.email}`,
      role: 'viewer',
    });
    expect(out.user.role).toBe('viewer');
    expect((await t.services.members.remove(t.services.uow.as(principal), member.id)).id).toBe(member.id);
    // Their own role: checked before the change (the check after it would see it).
    expect((await t.services.members.setRole(t.services.uow.as(principal), principal.userId, 'member')).role).toBe(
      'member',
    );
  });
});
