// Backends: both — the entries are rows written in the transaction of each change, on either database
// Tier: full — console sign-ins hash passwords with scrypt at OWASP's cost (about a second of CPU each), a dozen here
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stepAt, totpCode } from '../../src/modules/mfa/totp.js';
import { json, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf, onlyEntry, type StoredEntry, storedEntries } from '../helpers/audit-entries.js';
import { type ConsoleClient, linkToken, ORIGIN, PASSWORD, signIn } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { adminOf, enrolTotp, manualClock, postPassword, postSecondFactor } from '../helpers/two-factor.js';

// Each change through its real door (the console's HTTP API, sign-in), one entry each with its actor, target and
// changes; a refused change leaves none. The last test greps every entry the file made for the secrets it saw.
vi.setConfig({ testTimeout: 120_000 });

const T0 = (stepAt(Date.now()) + 10) * 30_000;
const clock = manualClock(T0);
const UA = 'audit-test-browser/1.0';
/** Every secret the tests handled: passwords, hashes, link tokens, TOTP secrets, recovery codes. */
const secrets = new Set<string>();
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ clock, config: { PUBLIC_URL: ORIGIN } });
});
afterAll(() => t.close());

type Admin = Awaited<ReturnType<typeof adminOf>>;
async function admin(name: string): Promise<Admin> {
  const a = await adminOf(t, name);
  secrets.add(PASSWORD);
  return a;
}

/** A console call with a user agent, answering the response (its x-request-id names the entry's request). */
function call(c: ConsoleClient, opts: Parameters<ConsoleClient['call']>[0]) {
  return c.call({ ...opts, headers: { 'user-agent': UA, ...opts.headers } });
}

/** The request's origin on an entry: the answer's request id, the client's address and user agent. */
function expectOrigin(e: StoredEntry, requestId: unknown) {
  expect(e.request_id).toBe(requestId);
  expect(e.ip).toBe('127.0.0.1');
  expect(e.user_agent).toBe(UA);
}

function expectUserActor(e: StoredEntry, userId: string, name: string) {
  expect({ type: e.actor_type, id: e.actor_id, name: e.actor_name }).toEqual({ type: 'user', id: userId, name });
}

async function hashes(email: string) {
  const rows = await t.storage.db.selectFrom('console_credentials').select('password_hash').where('email', '=', email).execute();
  for (const r of rows) secrets.add(r.password_hash);
}

describe('members (the console: invite, role change, removal)', () => {
  it('an invite, a role change and a removal make one entry each, by the admin, on the member', async () => {
    clock.set(T0);
    const a = await admin('Members');
    const email = `inv.${a.email}`;
    let res = await call(a.client, {
      method: 'POST',
      url: '/console/api/members',
      ws: a.ws,
      body: { email, role: 'member', name: 'Ivy' },
    });
    const invited = await entriesOf(t, a.ws, async () => undefined);
    expect(invited).toEqual([]);
    // The invite itself (entriesOf around the request).
    const inviteEntries = await entriesOf(t, a.ws, async () => {
      res = await call(a.client, {
        method: 'POST',
        url: '/console/api/members',
        ws: a.ws,
        body: { email: `two.${email}`, role: 'viewer', name: 'Vic' },
      });
    });
    expect(res.statusCode, res.body).toBe(201);
    const inviteUrl = json(res).data.invite_url as string;
    secrets.add(linkToken(inviteUrl));
    const userId = json(res).data.user_id as string;
    const e = onlyEntry(inviteEntries, 'member.invited');
    expectUserActor(e, a.userId, a.email);
    expect({ type: e.target_type, id: e.target_id, env: e.env }).toEqual({ type: 'user', id: userId, env: null });
    expect(e.changes).toMatchObject({
      email: { before: null, after: `two.${email}` },
      role: { before: null, after: 'viewer' },
    });
    expectOrigin(e, res.headers['x-request-id']);

    const changed = await entriesOf(t, a.ws, async () => {
      res = await call(a.client, { method: 'PATCH', url: `/console/api/members/${userId}`, ws: a.ws, body: { role: 'member' } });
    });
    expect(res.statusCode, res.body).toBe(200);
    const rc = onlyEntry(changed, 'member.role_changed');
    expectUserActor(rc, a.userId, a.email);
    expect({ type: rc.target_type, id: rc.target_id }).toEqual({ type: 'user', id: userId });
    expect(rc.changes).toEqual({ role: { before: 'viewer', after: 'member' } });
    expectOrigin(rc, res.headers['x-request-id']);

    // The same role again changes nothing and records nothing.
    expect(
      await entriesOf(t, a.ws, () =>
        call(a.client, { method: 'PATCH', url: `/console/api/members/${userId}`, ws: a.ws, body: { role: 'member' } }),
      ),
    ).toEqual([]);

    const removed = await entriesOf(t, a.ws, async () => {
      res = await call(a.client, { method: 'DELETE', url: `/console/api/members/${userId}`, ws: a.ws });
    });
    expect(res.statusCode).toBe(204);
    const rm = onlyEntry(removed, 'member.removed');
    expectUserActor(rm, a.userId, a.email);
    expect({ type: rm.target_type, id: rm.target_id }).toEqual({ type: 'user', id: userId });
    expect(rm.changes).toMatchObject({ role: { before: 'member', after: null } });
  });

  it('refused changes leave no entry: a member is not an admin, an unknown member, a taken email', async () => {
    clock.set(T0);
    const a = await admin('Refused');
    const res = await call(a.client, {
      method: 'POST',
      url: '/console/api/members',
      ws: a.ws,
      body: { email: `m.${a.email}`, role: 'member' },
    });
    const memberId = json(res).data.user_id as string;
    secrets.add(linkToken(json(res).data.invite_url));
    await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body: { token: linkToken(json(res).data.invite_url), password: PASSWORD },
      headers: { origin: ORIGIN },
    });
    const member = await signIn(t, `m.${a.email}`);
    const none = await entriesOf(t, a.ws, async () => {
      expectError(
        await call(member.client ?? member, { method: 'PATCH', url: `/console/api/members/${a.userId}`, ws: a.ws, body: { role: 'viewer' } }),
        403,
        'insufficient_scope',
      );
      expectError(
        await call(member, { method: 'POST', url: '/console/api/members', ws: a.ws, body: { email: 'x@example.test', role: 'viewer' } }),
        403,
        'insufficient_scope',
      );
      expectError(
        await call(a.client, { method: 'PATCH', url: '/console/api/members/usr_01JUNKNOWN0000000000000000', ws: a.ws, body: { role: 'viewer' } }),
        404,
        'not_found',
      );
      expectError(
        await call(a.client, { method: 'POST', url: '/console/api/members', ws: a.ws, body: { email: `m.${a.email}`, role: 'viewer' } }),
        400,
        'validation_error',
      );
    });
    expect(none.filter((e) => e.action.startsWith('member.'))).toEqual([]);
    expect(memberId).toMatch(/^usr_/);
  });
});
