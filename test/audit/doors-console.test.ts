// Backends: both — the entries are rows written in the transaction of each change, on either database
// Tier: full — console sign-ins hash passwords with scrypt at OWASP's cost (about a second of CPU each), a dozen here
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stepAt, totpCode } from '../../src/modules/mfa/totp.js';
import { asCli, json, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf, onlyEntry, type StoredEntry, storedEntries } from '../helpers/audit-entries.js';
import { type ConsoleClient, linkToken, ORIGIN, PASSWORD, signIn } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { adminOf, clientOf, enrolTotp, manualClock } from '../helpers/two-factor.js';

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
  const rows = await t.storage.db
    .selectFrom('console_credentials')
    .select('password_hash')
    .where('email', '=', email)
    .execute();
  for (const r of rows) secrets.add(r.password_hash);
}

describe('members (the console: invite, role change, removal)', () => {
  it('an invite, a role change and a removal make one entry each, by the admin, on the member', async () => {
    clock.set(T0);
    const a = await admin('Members');
    const email = `inv.${a.email}`;
    // A read records nothing.
    expect(
      await entriesOf(t, a.ws, () => call(a.client, { method: 'GET', url: '/console/api/members/invites', ws: a.ws })),
    ).toEqual([]);
    let res!: LightMyRequestResponse;
    // The invite itself (entriesOf around the request).
    const inviteEntries = await entriesOf(t, a.ws, async () => {
      res = await call(a.client, {
        method: 'POST',
        url: '/console/api/members',
        ws: a.ws,
        body: { email, role: 'viewer', name: 'Vic' },
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
      email: { before: null, after: email },
      role: { before: null, after: 'viewer' },
    });
    expectOrigin(e, res.headers['x-request-id']);

    const changed = await entriesOf(t, a.ws, async () => {
      res = await call(a.client, {
        method: 'PATCH',
        url: `/console/api/members/${userId}`,
        ws: a.ws,
        body: { role: 'member' },
      });
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
        await call(member, {
          method: 'PATCH',
          url: `/console/api/members/${a.userId}`,
          ws: a.ws,
          body: { role: 'viewer' },
        }),
        403,
        'insufficient_scope',
      );
      expectError(
        await call(member, {
          method: 'POST',
          url: '/console/api/members',
          ws: a.ws,
          body: { email: 'x@example.test', role: 'viewer' },
        }),
        403,
        'insufficient_scope',
      );
      expectError(
        await call(a.client, {
          method: 'PATCH',
          url: '/console/api/members/usr_01JUNKNOWN0000000000000000',
          ws: a.ws,
          body: { role: 'viewer' },
        }),
        404,
        'not_found',
      );
      expectError(
        await call(a.client, {
          method: 'POST',
          url: '/console/api/members',
          ws: a.ws,
          body: { email: `m.${a.email}`, role: 'viewer' },
        }),
        400,
        'validation_error',
      );
    });
    expect(none.filter((e) => e.action.startsWith('member.'))).toEqual([]);
    expect(memberId).toMatch(/^usr_/);
  });
});

/** POST /console/api/session with the test's user agent. */
function postSignIn(email: string, password: string) {
  return t.request({
    method: 'POST',
    url: '/console/api/session',
    body: { email, password },
    headers: { origin: ORIGIN, 'user-agent': UA },
  });
}

describe('sessions (sign-in, failed sign-in, sign-out)', () => {
  it('a wrong password, a sign-in and a sign-out make one entry each, in the workspace, as the person', async () => {
    clock.set(T0);
    const a = await admin('Sessions');
    let res!: LightMyRequestResponse;
    const failed = await entriesOf(t, a.ws, async () => {
      res = await postSignIn(a.email, 'not the password at all');
    });
    expectError(res, 401, 'invalid_credentials');
    secrets.add('not the password at all');
    const f = onlyEntry(failed, 'session.sign_in_failed');
    expectUserActor(f, a.userId, a.email);
    expect({ type: f.target_type, id: f.target_id, env: f.env }).toEqual({ type: 'user', id: a.userId, env: null });
    expect(f.changes).toEqual({ failed_step: { before: null, after: 'password' } });
    expectOrigin(f, res.headers['x-request-id']);

    // An email nobody has records nothing, anywhere.
    expect(await entriesOf(t, null, () => postSignIn(`nobody.${a.email}`, 'not the password at all'))).toEqual([]);

    const signedIn = await entriesOf(t, a.ws, async () => {
      res = await postSignIn(a.email, PASSWORD);
    });
    const client = clientOf(t, res);
    const s = onlyEntry(signedIn, 'session.signed_in');
    expectUserActor(s, a.userId, a.email);
    expect({ type: s.target_type, id: s.target_id }).toEqual({ type: 'session', id: client.session.session_id });
    expect(s.changes).toMatchObject({ method: { before: null, after: 'password' } });
    expectOrigin(s, res.headers['x-request-id']);

    const out = await entriesOf(t, a.ws, async () => {
      res = await call(client, { method: 'DELETE', url: '/console/api/session' });
    });
    expect(res.statusCode).toBe(204);
    const o = onlyEntry(out, 'session.signed_out');
    expectUserActor(o, a.userId, a.email);
    expect({ type: o.target_type, id: o.target_id }).toEqual({ type: 'session', id: client.session.session_id });
    expectOrigin(o, res.headers['x-request-id']);
  });

  it("a person in two workspaces: a sign-in is one entry in each, by that workspace's user", async () => {
    clock.set(T0);
    const a = await admin('Twice');
    const other = await t.services.workspaces.create(asCli(t.services), { name: 'Second', adminEmail: a.email });
    let res!: LightMyRequestResponse;
    const entries = await entriesOf(t, null, async () => {
      res = await postSignIn(a.email, PASSWORD);
    });
    const sessionId = clientOf(t, res).session.session_id;
    expect(entries.map((e) => [e.workspace_id, e.action, e.actor_id]).sort()).toEqual(
      [
        [a.ws, 'session.signed_in', a.userId],
        [other.workspace.id, 'session.signed_in', other.user.id],
      ].sort(),
    );
    // Ended from the sessions list of another of their sessions: signed out, in each workspace too.
    const ended = await entriesOf(t, null, async () => {
      res = await call(a.client, { method: 'DELETE', url: `/console/api/sessions/${sessionId}` });
    });
    expect(res.statusCode).toBe(204);
    expect(ended.map((e) => [e.workspace_id, e.action, e.target_id]).sort()).toEqual(
      [
        [a.ws, 'session.signed_out', sessionId],
        [other.workspace.id, 'session.signed_out', sessionId],
      ].sort(),
    );
    // An unknown or already ended session: 404, nothing recorded.
    expect(
      await entriesOf(t, null, async () => {
        expectError(
          await call(a.client, { method: 'DELETE', url: `/console/api/sessions/${sessionId}` }),
          404,
          'not_found',
        );
      }),
    ).toEqual([]);
  });

  it('a wrong second factor is a failed sign-in (no sign-in); the right one signs in once', async () => {
    clock.set(T0);
    const a = await admin('Second step');
    const { secret, codes } = await enrolTotp(a.client, T0);
    secrets.add(secret);
    for (const c of codes) secrets.add(c);
    clock.set(T0 + 30_000);
    const token = json(await postSignIn(a.email, PASSWORD)).data.token as string;
    secrets.add(token);
    const second = (body: object) =>
      t.request({
        method: 'POST',
        url: '/console/api/session/second-factor',
        body: { token, ...body },
        headers: { origin: ORIGIN, 'user-agent': UA },
      });
    const wrong = await entriesOf(t, a.ws, async () => {
      expectError(await second({ code: '000000' }), 401, 'invalid_code');
    });
    expect(onlyEntry(wrong, 'session.sign_in_failed').changes).toEqual({
      failed_step: { before: null, after: 'second_factor' },
    });
    let res!: LightMyRequestResponse;
    const right = await entriesOf(t, a.ws, async () => {
      res = await second({ code: totpCode(secret, clock.now()) });
    });
    expect(res.statusCode, res.body).toBe(201);
    const s = onlyEntry(right, 'session.signed_in');
    expect(s.changes).toMatchObject({ method: { before: null, after: 'password+totp' } });
    expectOrigin(s, res.headers['x-request-id']);
  });
});

describe('passwords', () => {
  const NEW = 'a brand new passphrase 42';
  it('a change: user.password_changed with the password only as "[redacted]"; a wrong current password leaves none', async () => {
    clock.set(T0);
    const a = await admin('Password');
    secrets.add(NEW);
    const change = (current: string) =>
      call(a.client, {
        method: 'POST',
        url: '/console/api/password/change',
        body: { current_password: current, new_password: NEW },
      });
    expect(
      await entriesOf(t, a.ws, async () => {
        expectError(await change('wrong current password'), 400, 'validation_error');
      }),
    ).toEqual([]);
    await hashes(a.email);
    let res!: LightMyRequestResponse;
    const changed = await entriesOf(t, a.ws, async () => {
      res = await change(PASSWORD);
    });
    expect(res.statusCode, res.body).toBe(204);
    await hashes(a.email);
    const e = onlyEntry(changed, 'user.password_changed');
    expectUserActor(e, a.userId, a.email);
    expect({ type: e.target_type, id: e.target_id }).toEqual({ type: 'user', id: a.userId });
    expect(e.changes).toEqual({ password: { before: '[redacted]', after: '[redacted]' } });
    expectOrigin(e, res.headers['x-request-id']);
  });

  it('"Forgot password": user.reset_link_created by the member, with the request\'s origin; an unknown email, none', async () => {
    clock.set(T0);
    const a = await admin('Forgot');
    const forgot = (email: string) =>
      t.request({
        method: 'POST',
        url: '/console/api/password/forgot',
        body: { email },
        headers: { origin: ORIGIN, 'user-agent': UA },
      });
    let res!: LightMyRequestResponse;
    const asked = await entriesOf(t, a.ws, async () => {
      res = await forgot(a.email);
    });
    expect(res.statusCode).toBe(202);
    const e = onlyEntry(asked, 'user.reset_link_created');
    expectUserActor(e, a.userId, a.email);
    expect({ type: e.target_type, id: e.target_id, env: e.env }).toEqual({ type: 'user', id: a.userId, env: null });
    expect(Object.keys(e.changes)).toEqual(['expires_at']);
    expect(Date.parse(e.changes.expires_at?.after as string)).toBe(T0 + 3_600_000);
    expectOrigin(e, res.headers['x-request-id']);
    // The link itself waits in the outbox for its email: its token is a secret the entry never holds.
    const mail = await t.storage.db
      .selectFrom('notifications')
      .select('secret')
      .where('type', '=', 'password.reset')
      .where('workspace_id', '=', a.ws)
      .executeTakeFirstOrThrow();
    const token = linkToken(String(mail.secret));
    expect(token.length).toBeGreaterThan(20);
    secrets.add(token);
    expect(JSON.stringify(e)).not.toContain(token);
    expect(await entriesOf(t, null, () => forgot(`nobody.${a.email}`))).toEqual([]);
  });

  it('a reset link: user.password_changed and session.signed_in, both as the person; a used link leaves none', async () => {
    clock.set(T0);
    const a = await admin('Reset');
    const link = await t.services.consoleAuth.resetLink(asCli(t.services), a.email);
    const token = linkToken(link?.url ?? '');
    secrets.add(token);
    const set = () =>
      t.request({
        method: 'POST',
        url: '/console/api/password/set',
        body: { token, password: NEW },
        headers: { origin: ORIGIN, 'user-agent': UA },
      });
    let res!: LightMyRequestResponse;
    const entries = await entriesOf(t, a.ws, async () => {
      res = await set();
    });
    expect(res.statusCode, res.body).toBe(200);
    await hashes(a.email);
    expect(entries.map((e) => e.action)).toEqual(['user.password_changed', 'session.signed_in']);
    for (const e of entries) {
      expectUserActor(e, a.userId, a.email);
      expectOrigin(e, res.headers['x-request-id']);
    }
    expect(entries[0]?.changes).toEqual({ password: { before: '[redacted]', after: '[redacted]' } });
    expect(
      await entriesOf(t, a.ws, async () => {
        expectError(await set(), 400, 'invalid_link');
      }),
    ).toEqual([]);
  });
});

describe('second factors', () => {
  it('two-factor codes on, then off: one entry each; a wrong code leaves none', async () => {
    clock.set(T0);
    const a = await admin('Totp');
    const start = await call(a.client, { method: 'POST', url: '/console/api/two-factor/totp' });
    const secret = json(start).data.secret as string;
    secrets.add(secret);
    const confirm = (code: string) =>
      call(a.client, { method: 'POST', url: '/console/api/two-factor/totp/confirm', body: { code } });
    expect(
      await entriesOf(t, a.ws, async () => {
        expectError(await confirm('000000'), 400, 'validation_error');
      }),
    ).toEqual([]);
    let res!: LightMyRequestResponse;
    const on = await entriesOf(t, a.ws, async () => {
      res = await confirm(totpCode(secret, T0));
    });
    expect(res.statusCode).toBe(200);
    for (const c of json(res).data.recovery_codes as string[]) secrets.add(c);
    const e = onlyEntry(on, 'user.mfa_enabled');
    expectUserActor(e, a.userId, a.email);
    expect({ type: e.target_type, id: e.target_id }).toEqual({ type: 'user', id: a.userId });
    expect(e.changes).toEqual({ totp: { before: false, after: true } });
    expectOrigin(e, res.headers['x-request-id']);

    clock.set(T0 + 30_000);
    const off = (code: string) =>
      call(a.client, {
        method: 'POST',
        url: '/console/api/two-factor/totp/disable',
        body: { password: PASSWORD, code },
      });
    expect(
      await entriesOf(t, a.ws, async () => {
        expectError(await off('123456'), 400, 'validation_error');
      }),
    ).toEqual([]);
    const offEntries = await entriesOf(t, a.ws, async () => {
      res = await off(totpCode(secret, clock.now()));
    });
    expect(res.statusCode).toBe(204);
    const d = onlyEntry(offEntries, 'user.mfa_disabled');
    expectUserActor(d, a.userId, a.email);
    expect(d.changes).toEqual({ totp: { before: true, after: false } });
  });

  it('new recovery codes: user.recovery_codes_regenerated, the codes only as "[redacted]"; a wrong code leaves none', async () => {
    clock.set(T0);
    const a = await admin('Recovery codes');
    const { secret, codes } = await enrolTotp(a.client, T0);
    secrets.add(secret);
    for (const c of codes) secrets.add(c);
    clock.set(T0 + 30_000);
    const regenerate = (code: string) =>
      call(a.client, {
        method: 'POST',
        url: '/console/api/two-factor/recovery-codes',
        body: { password: PASSWORD, code },
      });
    expect(
      await entriesOf(t, a.ws, async () => {
        expectError(await regenerate('123456'), 400, 'validation_error');
      }),
    ).toEqual([]);
    let res!: LightMyRequestResponse;
    // With one recovery code spent as the second half of re-authentication: nine were left.
    const fresh = await entriesOf(t, a.ws, async () => {
      res = await regenerate(codes[0] as string);
    });
    expect(res.statusCode, res.body).toBe(200);
    const next = json(res).data.recovery_codes as string[];
    expect(next).toHaveLength(10);
    for (const c of next) secrets.add(c);
    const e = onlyEntry(fresh, 'user.recovery_codes_regenerated');
    expectUserActor(e, a.userId, a.email);
    expect({ type: e.target_type, id: e.target_id, env: e.env }).toEqual({ type: 'user', id: a.userId, env: null });
    expect(e.changes).toEqual({
      recovery_codes: { before: '[redacted]', after: '[redacted]' },
      recovery_codes_left: { before: 9, after: 10 },
    });
    expectOrigin(e, res.headers['x-request-id']);
    for (const c of [...codes, ...next]) expect(JSON.stringify(e)).not.toContain(c);
  });

  it("an admin resets a member's second factor (user.mfa_reset, by the admin); the policy (workspace.settings_changed)", async () => {
    clock.set(T0);
    const a = await admin('Reset factor');
    const inv = await call(a.client, {
      method: 'POST',
      url: '/console/api/members',
      ws: a.ws,
      body: { email: `f.${a.email}`, role: 'member' },
    });
    const memberId = json(inv).data.user_id as string;
    secrets.add(linkToken(json(inv).data.invite_url));
    const member = clientOf(
      t,
      await (async () => {
        await t.request({
          method: 'POST',
          url: '/console/api/password/set',
          body: { token: linkToken(json(inv).data.invite_url), password: PASSWORD },
          headers: { origin: ORIGIN },
        });
        return postSignIn(`f.${a.email}`, PASSWORD);
      })(),
    );
    const { secret, codes } = await enrolTotp(member, T0);
    secrets.add(secret);
    for (const c of codes) secrets.add(c);
    let res!: LightMyRequestResponse;
    const reset = await entriesOf(t, a.ws, async () => {
      res = await call(a.client, { method: 'DELETE', url: `/console/api/members/${memberId}/second-factor`, ws: a.ws });
    });
    expect(res.statusCode, res.body).toBe(204);
    const r = onlyEntry(reset, 'user.mfa_reset');
    expectUserActor(r, a.userId, a.email);
    expect({ type: r.target_type, id: r.target_id }).toEqual({ type: 'user', id: memberId });
    expect(r.changes).toEqual({ totp: { before: true, after: false }, passkeys: { before: 0, after: 0 } });
    // A reset of someone with no factor left changes nothing: no entry.
    expect(
      await entriesOf(t, a.ws, () =>
        call(a.client, { method: 'DELETE', url: `/console/api/members/${memberId}/second-factor`, ws: a.ws }),
      ),
    ).toEqual([]);

    const policy = (on: boolean) =>
      call(a.client, {
        method: 'PUT',
        url: '/console/api/workspace/sign-in-policy',
        ws: a.ws,
        body: { require_second_factor: on },
      });
    const set = await entriesOf(t, a.ws, async () => {
      res = await policy(true);
    });
    const p = onlyEntry(set, 'workspace.settings_changed');
    expectUserActor(p, a.userId, a.email);
    expect({ type: p.target_type, id: p.target_id, env: p.env }).toEqual({ type: 'workspace', id: a.ws, env: null });
    expect(p.changes).toEqual({ require_second_factor: { before: false, after: true } });
    expectOrigin(p, res.headers['x-request-id']);
    expect(await entriesOf(t, a.ws, () => policy(true))).toEqual([]);
    // A member may not change it: refused, no entry.
    expect(
      await entriesOf(t, a.ws, async () => {
        expectError(
          await call(member, {
            method: 'PUT',
            url: '/console/api/workspace/sign-in-policy',
            ws: a.ws,
            body: { require_second_factor: false },
          }),
          403,
          'insufficient_scope',
        );
      }),
    ).toEqual([]);
  });
});

describe('no secret in any entry', () => {
  it('no password, password hash, link token, TOTP secret or recovery code in any entry this file made', async () => {
    const all = await storedEntries(t);
    expect(all.length).toBeGreaterThan(25);
    const text = JSON.stringify(all);
    expect(secrets.size).toBeGreaterThan(20);
    for (const secret of secrets) {
      expect(text.includes(secret), `an entry holds ${secret.slice(0, 4)}…`).toBe(false);
      const bare = secret.replace(/-/g, '');
      if (bare.length >= 8) expect(text.includes(bare)).toBe(false);
    }
    // Every entry's target and actor are set; the hash chain's field is there.
    for (const e of all) expect(e.hash).toMatch(/^[0-9a-f]{64}$/);
  });
});
