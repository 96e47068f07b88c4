import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { asCli, json, startTestApp, type TestApp } from '../helpers/app.js';
import { type ConsoleClient, linkToken, ORIGIN, PASSWORD, signIn, signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';

// Backends: both — sessions, single-use links and sign-in throttling live in the database
// Tier: full — console sign-ins over HTTP (each a password hash: scrypt, at the suite's lower cost of vitest.config.ts), dozens of them here
// Dozens of sign-ins, each a scrypt hash (at the suite's lower cost, vitest.config.ts): a loaded
// machine may need more than the default time per test.
vi.setConfig({ testTimeout: 120_000 });

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { PUBLIC_URL: ORIGIN } });
});
afterAll(() => t.close());

let n = 0;
async function newAdmin(): Promise<{ ws: string; email: string; live: string; client: ConsoleClient }> {
  const email = `Admin${++n}.${Date.now()}@Example.test`;
  const out = await t.services.workspaces.create(asCli(t.services), { name: `WS ${n}`, adminEmail: email });
  expect(out.set_password_url).toMatch(new RegExp(`^${ORIGIN}/console/set-password\\?token=[A-Za-z0-9_-]{43}$`));
  const client = await signInWithLink(t, out.set_password_url);
  return { ws: out.workspace.id, email: email.toLowerCase(), live: out.keys.live.key, client };
}

describe('console sign-in (docs/console.md)', () => {
  it('the admin link sets the first password once; sign-in opens a session with a secure cookie', async () => {
    const email = `first${Date.now()}@example.test`;
    const out = await t.services.workspaces.create(asCli(t.services), { name: 'First', adminEmail: email });
    const body = { token: linkToken(out.set_password_url), password: PASSWORD };
    const set = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body,
      headers: { origin: ORIGIN },
    });
    expect(set.statusCode).toBe(200);
    // Setting the password signs the person in: a session cookie and sign-in's answer.
    expect(String(set.headers['set-cookie'])).toMatch(/^wsvc_session=[A-Za-z0-9_-]{43};.*HttpOnly/);
    expect(json(set).data).toMatchObject({ email, csrf_token: expect.any(String), session_id: expect.any(String) });
    expect(json(set).data.memberships).toEqual([
      expect.objectContaining({ workspace_id: out.workspace.id, role: 'admin' }),
    ]);
    const again = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body,
      headers: { origin: ORIGIN },
    });
    expectError(again, 400, 'invalid_link');
    const res = await t.request({
      method: 'POST',
      url: '/console/api/session',
      body: { email, password: PASSWORD },
      headers: { origin: ORIGIN },
    });
    expect(res.statusCode).toBe(201);
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^wsvc_session=[A-Za-z0-9_-]{43};/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\//);
    const data = json(res).data;
    expect(data.memberships).toEqual([expect.objectContaining({ workspace_id: out.workspace.id, role: 'admin' })]);
    // The token is stored only as a digest.
    const rows = await t.storage.db.selectFrom('console_sessions').selectAll().where('email', '=', email).execute();
    // Two sessions: the one setting the password opened, and this sign-in's.
    expect(rows).toHaveLength(2);
    expect(JSON.stringify(rows)).not.toContain(cookie.split(';')[0]?.split('=')[1]);
    expect(JSON.stringify(rows)).not.toContain(String(set.headers['set-cookie']).split(';')[0]?.split('=')[1]);
  });

  it('setting a password signs the person in: a new session with its CSRF token; every earlier session ends', async () => {
    const { email, ws, client: before } = await newAdmin();
    const reset = await t.services.consoleAuth.resetLink(asCli(t.services), email);
    const set = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body: { token: linkToken(reset?.url ?? ''), password: 'a brand new passphrase' },
      headers: { origin: ORIGIN, 'user-agent': 'link browser' },
    });
    expect(set.statusCode, set.body).toBe(200);
    const cookie = String(set.headers['set-cookie']).split(';')[0] as string;
    const data = json(set).data;
    expect(data.session_id).not.toBe(before.session.session_id);
    // The session the link opened reads and writes (with its CSRF token, never without).
    const me = await t.request({ method: 'GET', url: '/console/api/session', headers: { cookie } });
    expect(me.statusCode).toBe(200);
    expect(json(me).data).toMatchObject({ email, session_id: data.session_id, csrf_token: data.csrf_token });
    const headers = { cookie, origin: ORIGIN, 'x-workspace-id': ws };
    const write = { method: 'POST' as const, url: '/console/api/v1/resources', body: { name: 'r', type: 'standard' } };
    expectError(await t.request({ ...write, headers }), 403, 'csrf_failed');
    expectError(
      await t.request({ ...write, headers: { ...headers, 'x-csrf-token': before.csrf } }),
      403,
      'csrf_failed',
    );
    expect((await t.request({ ...write, headers: { ...headers, 'x-csrf-token': data.csrf_token } })).statusCode).toBe(
      201,
    );
    // The session from before the link has ended.
    expectError(await before.call({ method: 'GET', url: '/console/api/session' }), 401, 'unauthenticated');
    const sessions = await t.request({ method: 'GET', url: '/console/api/sessions', headers: { cookie } });
    expect(json(sessions).data).toEqual([expect.objectContaining({ id: data.session_id, current: true })]);
  });

  it('a refused link sets no cookie; a link whose person is no longer a member anywhere is invalid_link', async () => {
    const { client: admin, ws } = await newAdmin();
    const invited = await admin.call({
      method: 'POST',
      url: '/console/api/members',
      ws,
      body: { email: `gone${n}@example.test`, role: 'viewer' },
    });
    expect(invited.statusCode, invited.body).toBeLessThan(300);
    const gone = json(invited).data;
    const viewer = await signInWithLink(t, gone.invite_url);
    const reset = await t.services.consoleAuth.resetLink(asCli(t.services), viewer.session.email);
    expect(reset).toBeDefined();
    const removed = await admin.call({ method: 'DELETE', url: `/console/api/members/${gone.user_id}`, ws });
    expect(removed.statusCode, removed.body).toBe(204);
    const res = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body: { token: linkToken(reset?.url ?? ''), password: 'a brand new passphrase' },
      headers: { origin: ORIGIN },
    });
    expectError(res, 400, 'invalid_link');
    expect(res.headers['set-cookie']).toBeUndefined();
    // The admin is untouched.
    expect((await admin.call({ method: 'GET', url: '/console/api/session' })).statusCode).toBe(200);
  });

  it('refuses short and long passwords with a validation error, and the link stays usable', async () => {
    const out = await t.services.workspaces.create(asCli(t.services), {
      name: 'Short',
      adminEmail: `short${Date.now()}@example.test`,
    });
    const token = linkToken(out.set_password_url);
    for (const password of ['123456789', 'x'.repeat(201)]) {
      const res = await t.request({
        method: 'POST',
        url: '/console/api/password/set',
        body: { token, password },
        headers: { origin: ORIGIN },
      });
      expectError(res, 400, 'validation_error');
    }
    const ok = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body: { token, password: '🔑🐙🌵🎻🚲🧭🍋🦉🪁🧊' },
      headers: { origin: ORIGIN },
    });
    expect(ok.statusCode).toBe(200);
  });

  it('a wrong password and an unknown email get the same 401; the sixth failure for an email is 429', async () => {
    const { email } = await newAdmin();
    const attempt = (e: string, p: string) =>
      t.request({
        method: 'POST',
        url: '/console/api/session',
        body: { email: e, password: p },
        headers: { origin: ORIGIN },
      });
    const wrong = await attempt(email, 'not the password');
    const unknown = await attempt(`nobody${Date.now()}@example.test`, 'not the password');
    expect(expectError(wrong, 401, 'invalid_credentials').message).toBe(
      expectError(unknown, 401, 'invalid_credentials').message,
    );
    for (let i = 0; i < 4; i++) expectError(await attempt(email, 'not the password'), 401, 'invalid_credentials');
    const blocked = await attempt(email, PASSWORD);
    expectError(blocked, 429, 'rate_limited');
    expect(blocked.headers['retry-after']).toBe('900');
  }, 60_000);

  it('bad sign-in bodies are 400 with the error body', async () => {
    for (const body of [
      {},
      { email: 'x@example.test' },
      { email: 'nope', password: PASSWORD },
      { email: 'a@b.c', password: 1 },
    ]) {
      const res = await t.request({ method: 'POST', url: '/console/api/session', body, headers: { origin: ORIGIN } });
      expectError(res, 400, 'validation_error');
    }
    const notJson = await t.request({
      method: 'POST',
      url: '/console/api/session',
      body: '{',
      headers: { origin: ORIGIN, 'content-type': 'application/json' },
    });
    expectError(notJson, 400, 'invalid_json');
  });
});

describe('console session API (docs/console.md)', () => {
  it('acts through the same services as /v1, in the chosen workspace and environment', async () => {
    const a = await newAdmin();
    const created = await a.client.call({
      method: 'POST',
      url: '/console/api/v1/resources',
      ws: a.ws,
      env: 'live',
      body: { name: 'From the console', type: 'standard' },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = json(created).data.id;
    const viaKey = await t.request({ method: 'GET', url: `/v1/resources/${id}`, key: a.live });
    expect(viaKey.statusCode).toBe(200);
    const inTest = await a.client.call({
      method: 'GET',
      url: `/console/api/v1/resources/${id}`,
      ws: a.ws,
      env: 'test',
    });
    expectError(inTest, 404, 'not_found');
    const list = await a.client.call({ method: 'GET', url: '/console/api/v1/resources', ws: a.ws, env: 'live' });
    expect(json(list).data.map((r: { id: string }) => r.id)).toEqual([id]);
  });

  it('/v1 never accepts the cookie; the console API never accepts an API key', async () => {
    const a = await newAdmin();
    const v1 = await t.request({ method: 'GET', url: '/v1/resources', headers: { cookie: a.client.cookie } });
    expectError(v1, 401, 'missing_token');
    const consoleWithKey = await t.request({
      method: 'GET',
      url: '/console/api/v1/resources',
      key: a.live,
      headers: { 'x-workspace-id': a.ws },
    });
    expectError(consoleWithKey, 401, 'unauthenticated');
  });

  it('a non-GET without the CSRF token, or from another origin, or with no Origin is 403 csrf_failed', async () => {
    const a = await newAdmin();
    const body = { name: 'x', type: 'standard' };
    const base = { cookie: a.client.cookie, 'x-workspace-id': a.ws, 'x-csrf-token': a.client.csrf, origin: ORIGIN };
    const cases: Record<string, string>[] = [
      { ...base, 'x-csrf-token': '' },
      { ...base, 'x-csrf-token': 'wrong' },
      { ...base, origin: 'https://evil.example' },
      Object.fromEntries(Object.entries(base).filter(([k]) => k !== 'origin')),
    ];
    for (const headers of cases) {
      const res = await t.request({ method: 'POST', url: '/console/api/v1/resources', body, headers });
      expectError(res, 403, 'csrf_failed');
    }
    const list = await a.client.call({ method: 'GET', url: '/console/api/v1/resources', ws: a.ws });
    expect(json(list).data).toEqual([]);
  });

  it('missing or bad workspace and environment headers are 400; another workspace is 404', async () => {
    const a = await newAdmin();
    const b = await newAdmin();
    expectError(await a.client.call({ method: 'GET', url: '/console/api/v1/resources' }), 400, 'validation_error');
    expectError(
      await a.client.call({ method: 'GET', url: '/console/api/v1/resources', ws: a.ws, headers: { 'x-env': 'prod' } }),
      400,
      'validation_error',
    );
    expectError(await a.client.call({ method: 'GET', url: '/console/api/v1/resources', ws: b.ws }), 404, 'not_found');
    expectError(await a.client.call({ method: 'GET', url: '/console/api/nope' }), 404, 'not_found');
  });

  it('a session made on one API process is valid on another (sessions live in the database)', async () => {
    const a = await newAdmin();
    const other = await startTestApp({ storage: t.storage as TestApp['storage'] & { url: string } });
    try {
      const res = await other.request({
        method: 'POST',
        url: '/console/api/v1/resources',
        body: { name: 'Made on the other process', type: 'standard' },
        headers: { cookie: a.client.cookie, origin: ORIGIN, 'x-csrf-token': a.client.csrf, 'x-workspace-id': a.ws },
      });
      expect(res.statusCode, res.body).toBe(201);
      await a.client.call({ method: 'DELETE', url: '/console/api/session' });
      const after = await other.request({
        method: 'GET',
        url: '/console/api/session',
        headers: { cookie: a.client.cookie },
      });
      expectError(after, 401, 'unauthenticated');
    } finally {
      await other.close();
    }
  });

  it('answers with the security headers', async () => {
    const a = await newAdmin();
    const res = await a.client.call({ method: 'GET', url: '/console/api/session' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toMatch(/script-src 'self'/);
    expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    expect(res.headers['content-security-policy']).not.toMatch(/unsafe-inline/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('same-origin');
  });

  it('sign-out ends the session at once: reads and writes alike answer 401 unauthenticated', async () => {
    const a = await newAdmin();
    const open = await t.services.consoleAuth.sessionOf(a.client.cookie.split('=')[1]);
    if (!open) throw new Error('no session');
    // Resolved before the sign-out, as a request already past its authentication would have it.
    const inFlight = await t.services.consoleAuth.principalFor(open.session, a.ws, 'live');
    const out = await a.client.call({ method: 'DELETE', url: '/console/api/session' });
    expect(out.statusCode).toBe(204);
    expectError(await a.client.call({ method: 'GET', url: '/console/api/session' }), 401, 'unauthenticated');
    const read = await a.client.call({ method: 'GET', url: '/console/api/v1/resources', ws: a.ws });
    expectError(read, 401, 'unauthenticated');
    const write = await a.client.call({
      method: 'POST',
      url: '/console/api/v1/resources',
      ws: a.ws,
      body: { name: 'after sign-out', type: 'standard' },
    });
    expectError(write, 401, 'unauthenticated');
    // The write transaction's own check (the sign-out committed after authentication) answers the same code.
    await expect(
      t.services.resources.create(t.services.uow.as(inFlight), { name: 'in flight', type: 'standard' }),
    ).rejects.toMatchObject({
      statusCode: 401,
      code: 'unauthenticated',
    });
  });

  it('a console route answers a method it lacks with 405, Allow and the error body, as /v1 does', async () => {
    const a = await newAdmin();
    for (const [method, url, allow] of [
      ['PUT', '/console/api/session', 'DELETE, GET, HEAD, POST'],
      ['GET', '/console/api/password/set', 'POST'],
      ['PATCH', '/console/api/sessions', 'GET, HEAD'],
      ['PUT', '/console/api/v1/resources', 'GET, HEAD, POST'],
    ] as const) {
      const res = await a.client.call({ method, url, ws: a.ws });
      expectError(res, 405, 'method_not_allowed');
      expect(res.headers.allow, `${method} ${url}`).toBe(allow);
    }
    expectError(await a.client.call({ method: 'GET', url: '/console/api/nothing-here' }), 404, 'not_found');
  });

  it('a password change ends the other sessions; the new password signs in', async () => {
    const a = await newAdmin();
    const other = await signIn(t, a.email);
    const res = await a.client.call({
      method: 'POST',
      url: '/console/api/password/change',
      body: { current_password: PASSWORD, new_password: 'a brand new password' },
    });
    expect(res.statusCode, res.body).toBe(204);
    expectError(await other.call({ method: 'GET', url: '/console/api/session' }), 401, 'unauthenticated');
    expect((await a.client.call({ method: 'GET', url: '/console/api/session' })).statusCode).toBe(200);
    await signIn(t, a.email, 'a brand new password');
  });
});

describe('console members and roles (docs/api.md#keys-scopes-and-roles, docs/console.md)', () => {
  it('an invited viewer sets a password, reads, and gets 403 on writes; removal ends their access', async () => {
    const a = await newAdmin();
    const inv = await a.client.call({
      method: 'POST',
      url: '/console/api/members',
      ws: a.ws,
      body: { email: `viewer${Date.now()}@example.test`, role: 'viewer' },
    });
    expect(inv.statusCode, inv.body).toBe(201);
    const pending = await a.client.call({ method: 'GET', url: '/console/api/members/invites', ws: a.ws });
    expect(json(pending).data).toHaveLength(1);
    const viewer = await signInWithLink(t, json(inv).data.invite_url);
    expect(json(await a.client.call({ method: 'GET', url: '/console/api/members/invites', ws: a.ws })).data).toEqual(
      [],
    );
    const read = await viewer.call({ method: 'GET', url: '/console/api/v1/resources', ws: a.ws });
    expect(read.statusCode).toBe(200);
    const write = await viewer.call({
      method: 'POST',
      url: '/console/api/v1/resources',
      ws: a.ws,
      body: { name: 'no', type: 'standard' },
    });
    expectError(write, 403, 'insufficient_scope');
    expectError(
      await viewer.call({ method: 'GET', url: '/console/api/v1/webhooks', ws: a.ws }),
      403,
      'insufficient_scope',
    );
    const invite = await viewer.call({
      method: 'POST',
      url: '/console/api/members',
      ws: a.ws,
      body: { email: 'x@example.test', role: 'admin' },
    });
    expectError(invite, 403, 'insufficient_scope');
    const removed = await a.client.call({
      method: 'DELETE',
      url: `/console/api/members/${json(inv).data.user_id}`,
      ws: a.ws,
    });
    expect(removed.statusCode).toBe(204);
    expectError(await viewer.call({ method: 'GET', url: '/console/api/v1/resources', ws: a.ws }), 404, 'not_found');
  });

  it('keys: everyone makes their own; the plaintext once; revoke makes /v1 answer expired_token', async () => {
    const a = await newAdmin();
    const made = await a.client.call({
      method: 'POST',
      url: '/console/api/v1/keys',
      ws: a.ws,
      body: { name: 'CI', env: 'test', scopes: ['resources:read'] },
    });
    expect(made.statusCode, made.body).toBe(201);
    const { id, key } = json(made).data;
    expect(key).toMatch(/^svc_test_/);
    expect((await t.request({ method: 'GET', url: '/v1/resources', key })).statusCode).toBe(200);
    const list = json(await a.client.call({ method: 'GET', url: '/console/api/v1/keys', ws: a.ws })).data;
    expect(JSON.stringify(list)).not.toContain(key);
    const mine = list.find((k: { id: string }) => k.id === id);
    expect(mine).toMatchObject({ status: 'active', name: 'CI', env: 'test', scopes: ['resources:read'] });
    const bad = await a.client.call({
      method: 'POST',
      url: '/console/api/v1/keys',
      ws: a.ws,
      body: { name: '', env: 'x' },
    });
    expectError(bad, 400, 'validation_error');
    expect((await a.client.call({ method: 'DELETE', url: `/console/api/v1/keys/${id}`, ws: a.ws })).statusCode).toBe(
      204,
    );
    expectError(await t.request({ method: 'GET', url: '/v1/resources', key }), 401, 'expired_token');
  });
});
