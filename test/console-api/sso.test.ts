// Backends: both — single sign-on settings, sign-ins in flight, first arrivals and sessions are rows in the database.
// Tier: quick
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SsoFetch } from '../../src/modules/sso/sso.service.js';
import { json, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf, storedEntries } from '../helpers/audit-entries.js';
import { type ConsoleClient, ORIGIN } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { followToRedirect, type OidcProvider, startOidcProvider } from '../helpers/oidc-provider.js';
import { adminOf, clientOf, manualClock, postPassword } from '../helpers/two-factor.js';

vi.setConfig({ testTimeout: 120_000 });

const REDIRECT = `${ORIGIN}/console/sso/callback`;
const SECRET = 'sso-client-secret-0123456789abcdef';
const OTHER_SECRET = 'other-client-secret-0123456789abcdef';
const clock = manualClock(Date.now());
/** The hand in the middle: when set, the next token answer carries this ID token instead of its own. */
const swap: { idToken?: string } = {};
const ssoFetch: SsoFetch = async (url, options) => {
  const res = await fetch(url, options as RequestInit);
  if (!swap.idToken || !url.endsWith('/token')) return res;
  const body = (await res.json()) as Record<string, unknown>;
  body.id_token = swap.idToken;
  swap.idToken = undefined;
  return new Response(JSON.stringify(body), { status: res.status, headers: { 'content-type': 'application/json' } });
};

const log: string[] = [];
let t: TestApp;
let idp: OidcProvider;
let admin: { ws: string; userId: string; email: string; client: ConsoleClient };
beforeAll(async () => {
  idp = await startOidcProvider({
    clients: [
      { client_id: 'wsvc', client_secret: SECRET, redirect_uris: [REDIRECT] },
      { client_id: 'other-app', client_secret: OTHER_SECRET, redirect_uris: [REDIRECT] },
    ],
    idTokenTtlS: 120,
  });
  t = await startTestApp({
    clock,
    ssoFetch,
    config: { PUBLIC_URL: ORIGIN, SSO_ALLOW_HTTP_ISSUER: true, LOG_LEVEL: 'debug' },
    logStream: { write: (line: string) => void log.push(line) },
  });
  admin = await adminOf(t, 'Corp');
});
afterAll(async () => {
  await t?.close();
  await idp?.close();
});

const settings = (over: Record<string, unknown> = {}) => ({
  issuer: idp.issuer,
  client_id: 'wsvc',
  client_secret: SECRET,
  allowed_domains: ['corp.test'],
  default_role: 'member',
  required: false,
  ...over,
});

/** Starts a sign-in as a browser would: the authorization URL and the cookie binding it to this browser. */
async function start(email: string, ws = admin.ws) {
  const res = await t.request({
    method: 'POST',
    url: '/console/api/sso/start',
    body: { workspace_id: ws, email },
    headers: { origin: ORIGIN },
  });
  expect(res.statusCode, res.body).toBe(200);
  const cookie = String(res.headers['set-cookie']).split(';')[0] as string;
  expect(cookie).toMatch(/^wsvc_sso=/);
  return { url: json(res).data.authorization_url as string, cookie };
}

function finish(query: string, cookie?: string) {
  return t.request({
    method: 'POST',
    url: '/console/api/sso/callback',
    body: { query },
    headers: { origin: ORIGIN, ...(cookie ? { cookie } : {}) },
  });
}

describe('OpenID Connect single sign-on against a real provider (docs/sign-in.md#single-sign-on)', () => {
  it('an admin sets it up; the client secret is never answered again; the admins are told', async () => {
    const put = await admin.client.call({ method: 'PUT', url: '/console/api/sso', ws: admin.ws, body: settings() });
    expect(put.statusCode, put.body).toBe(200);
    expect(json(put).data).toMatchObject({ issuer: idp.issuer, client_secret_set: true, redirect_uri: REDIRECT });
    const got = await admin.client.call({ method: 'GET', url: '/console/api/sso', ws: admin.ws });
    for (const res of [put, got]) expect(res.body).not.toContain(SECRET);
    // Left out, the secret is kept; a member cannot see or change it.
    const again = await admin.client.call({
      method: 'PUT',
      url: '/console/api/sso',
      ws: admin.ws,
      body: { ...settings(), client_secret: undefined },
    });
    expect(again.statusCode).toBe(200);
    const told = await t.storage.db
      .selectFrom('notifications')
      .select('data')
      .where('type', '=', 'sso.configured')
      .execute();
    expect(told.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(told)).not.toContain(SECRET);
    expectError(
      await admin.client.call({
        method: 'PUT',
        url: '/console/api/sso',
        ws: admin.ws,
        body: { ...settings(), issuer: 'ftp://x' },
      }),
      400,
      'validation_error',
    );
    expectError(
      await admin.client.call({
        method: 'PUT',
        url: '/console/api/sso',
        ws: admin.ws,
        body: settings({ required: true }),
      }),
      400,
      'validation_error',
    );
  });

  it('the sign-in page finds the workspace from the email domain', async () => {
    const found = await t.request({
      method: 'POST',
      url: '/console/api/sso/discover',
      body: { email: 'Someone@CORP.test' },
      headers: { origin: ORIGIN },
    });
    expect(json(found).data).toEqual([{ workspace_id: admin.ws, workspace_name: 'Corp' }]);
    const none = await t.request({
      method: 'POST',
      url: '/console/api/sso/discover',
      body: { email: 'someone@elsewhere.test' },
      headers: { origin: ORIGIN },
    });
    expect(json(none).data).toEqual([]);
  });

  it('first arrival: the provider vouches, the person becomes a member with the configured role, in that workspace only', async () => {
    const { url, cookie } = await start('ada@corp.test');
    expect(new URL(url).searchParams.get('code_challenge_method')).toBe('S256');
    expect(new URL(url).searchParams.get('nonce')).toBeTruthy();
    const query = await followToRedirect(url, REDIRECT);
    const res = await finish(query, cookie);
    const ada = clientOf(t, res);
    expect(ada.session).toMatchObject({ email: 'ada@corp.test', method: 'sso' });
    expect(ada.session.memberships).toEqual([expect.objectContaining({ workspace_id: admin.ws, role: 'member' })]);
    const users = await ada.call({ method: 'GET', url: '/console/api/v1/users/me', ws: admin.ws });
    expect(json(users).data).toMatchObject({ email: 'ada@corp.test', role: 'member' });
    // The admins were told of the new member.
    const added = await t.storage.db
      .selectFrom('notifications')
      .select('data')
      .where('type', '=', 'member.added')
      .execute();
    expect(JSON.stringify(added)).toContain('ada@corp.test');
    // The audit log: the member joined by single sign-on, then signed in (to that workspace only), both as Ada.
    const adaId = json(users).data.id as string;
    const logged = (await storedEntries(t, admin.ws)).filter((e) => e.actor_id === adaId);
    expect(logged.map((e) => [e.action, e.target_id])).toEqual([
      ['member.invited', adaId],
      ['session.signed_in', ada.session.session_id],
    ]);
    expect(logged[0]?.changes).toMatchObject({ via: { before: null, after: 'sso' }, role: { after: 'member' } });
    expect(logged[1]?.changes).toMatchObject({ method: { before: null, after: 'sso' } });
    // The second time, the same member (no second row), and only a sign-in recorded.
    const next = await start('ada@corp.test');
    const again = await entriesOf(t, admin.ws, async () => {
      expect((await finish(await followToRedirect(next.url, REDIRECT), next.cookie)).statusCode).toBe(201);
    });
    expect(again.map((e) => e.action)).toEqual(['session.signed_in']);
    const rows = await t.storage.db.selectFrom('users').select('id').where('email', '=', 'ada@corp.test').execute();
    expect(rows).toHaveLength(1);
  });

  it('refuses a wrong state, a state from another browser, and a replayed code', async () => {
    const { url, cookie } = await start('bob@corp.test');
    const query = await followToRedirect(url, REDIRECT);
    const params = new URLSearchParams(query);
    const forged = new URLSearchParams(params);
    forged.set('state', 'not-the-state-of-this-sign-in');
    const wrong = expectError(await finish(forged.toString(), cookie), 400, 'sso_state_invalid');
    expect(wrong.message).toMatch(/start again from the sign-in page/);
    // The right state from a browser that did not start it (no cookie).
    const fresh = await start('bob@corp.test');
    const freshQuery = await followToRedirect(fresh.url, REDIRECT);
    expectError(await finish(freshQuery), 400, 'sso_state_invalid');
    // Used once: the same answer again is refused, by the state…
    expect((await finish(query, cookie)).statusCode).toBe(201);
    expectError(await finish(query, cookie), 400, 'sso_state_invalid');
    // …and the code under a new sign-in's state is refused by the provider (a code works once, with its verifier).
    const third = await start('bob@corp.test');
    const replay = new URLSearchParams(params);
    replay.set('state', new URL(third.url).searchParams.get('state') as string);
    const refused = expectError(await finish(replay.toString(), third.cookie), 401, 'sso_refused');
    expect(refused.message).toMatch(/refused the code \(invalid_grant/);
  });

  it('refuses an ID token issued for another client (audience)', async () => {
    const ours = await start('carol@corp.test');
    // The same person signs in to another application of the same provider, with our nonce; a hand in
    // the middle puts that ID token in the answer to our token request.
    const nonce = new URL(ours.url).searchParams.get('nonce') as string;
    // (PKCE is required: the attacker runs the other application's sign-in with a verifier of their own.)
    const own = new URL(ours.url);
    own.searchParams.set('client_id', 'other-app');
    own.searchParams.set('code_challenge', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
    const q2 = new URLSearchParams(await followToRedirect(own.href, REDIRECT));
    const tokens = await fetch(`${idp.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: q2.get('code') as string,
        redirect_uri: REDIRECT,
        client_id: 'other-app',
        client_secret: OTHER_SECRET,
        code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
      }),
    });
    expect(tokens.status).toBe(200);
    const otherIdToken = ((await tokens.json()) as { id_token: string }).id_token;
    const claims = JSON.parse(Buffer.from(otherIdToken.split('.')[1] as string, 'base64url').toString());
    expect(claims).toMatchObject({ aud: 'other-app', nonce, sub: 'carol@corp.test' });
    swap.idToken = otherIdToken;
    const res = await finish(await followToRedirect(ours.url, REDIRECT), ours.cookie);
    const err = expectError(res, 401, 'sso_refused');
    expect(err.message).toMatch(/another client \(audience\)/);
  });

  it('refuses an expired ID token (judged by the injected clock)', async () => {
    const { url, cookie } = await start('dan@corp.test');
    const query = await followToRedirect(url, REDIRECT);
    // The ID token lives 120 s (and 30 s of tolerance); five minutes later, within the sign-in's 10 minutes:
    clock.set(Date.now() + 5 * 60_000);
    try {
      const err = expectError(await finish(query, cookie), 401, 'sso_refused');
      // The provider's code lives 60 s: the clock moved only here, so the code is still good there.
      expect(err.message).toMatch(/expired/);
    } finally {
      clock.set(Date.now());
    }
  });

  it('refuses an email outside the allowed domains, with what to do', async () => {
    const { url, cookie } = await start('eve@elsewhere.test');
    const err = expectError(await finish(await followToRedirect(url, REDIRECT), cookie), 403, 'sso_domain_not_allowed');
    expect(err.message).toBe(
      'eve@elsewhere.test is not of an email domain this workspace accepts through single sign-on; ask a workspace admin to add elsewhere.test.',
    );
    expect(
      await t.storage.db.selectFrom('users').select('id').where('email', '=', 'eve@elsewhere.test').execute(),
    ).toEqual([]);
  });

  it('"SSO required" refuses password sign-in except for the break-glass admin; a provider down is a clear error', async () => {
    // A member who has a password.
    const invited = await admin.client.call({
      method: 'POST',
      url: '/console/api/members',
      ws: admin.ws,
      body: { email: 'pat@corp.test', role: 'member' },
    });
    const link = new URL(json(invited).data.invite_url).searchParams.get('token');
    const set = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body: { token: link, password: 'correct horse battery' },
      headers: { origin: ORIGIN },
    });
    expect(set.statusCode).toBe(200);
    const before = String(set.headers['set-cookie']).split(';')[0] as string;
    const csrf = json(set).data.csrf_token as string;
    const put = await admin.client.call({
      method: 'PUT',
      url: '/console/api/sso',
      ws: admin.ws,
      body: settings({ required: true, break_glass_user_id: admin.userId, client_secret: undefined }),
    });
    expect(put.statusCode, put.body).toBe(200);
    const refused = expectError(await postPassword(t, 'pat@corp.test'), 403, 'sso_required');
    expect(refused.message).toMatch(/Continue with SSO/);
    // The break-glass admin keeps the password.
    expect((await postPassword(t, admin.email)).statusCode).toBe(201);
    // A session that signed in with a password before reaches the workspace no more.
    const old = await t.request({
      method: 'GET',
      url: '/console/api/v1/users/me',
      headers: { cookie: before, 'x-workspace-id': admin.ws, 'x-csrf-token': csrf },
    });
    expectError(old, 403, 'sso_required');
    const listed = await t.request({ method: 'GET', url: '/console/api/session', headers: { cookie: before } });
    expect(json(listed).data.memberships).toEqual([]);
    // The provider down: a clear answer; the break-glass admin still signs in with the password.
    await idp.close();
    const down = await t.request({
      method: 'POST',
      url: '/console/api/sso/start',
      body: { workspace_id: admin.ws, email: 'pat@corp.test' },
      headers: { origin: ORIGIN },
    });
    const err = expectError(down, 503, 'sso_unavailable');
    expect(err.message).toMatch(/did not answer .*break-glass admin can sign in with a password/);
    expect((await postPassword(t, admin.email)).statusCode).toBe(201);
  });

  it('the client secret never reaches a log line, even at debug level', () => {
    expect(log.length).toBeGreaterThan(0);
    expect(log.join('\n')).not.toContain(SECRET);
  });
});
