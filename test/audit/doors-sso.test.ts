// Backends: both — the entries are rows written in the transaction of each sign-in, on either database
// Tier: quick
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { json, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf, onlyEntry, type StoredEntry, storedEntries } from '../helpers/audit-entries.js';
import { ORIGIN } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { followToRedirect, type OidcProvider, startOidcProvider } from '../helpers/oidc-provider.js';
import { adminOf, clientOf, manualClock } from '../helpers/two-factor.js';

// session.signed_in through its real door for single sign-on: the browser's round trip through a real OpenID
// provider on loopback (authorization, code, ID token) ends at POST /console/api/sso/callback. One entry, by the
// member, on the session, with its method; a refused callback leaves none; no secret of the round trip in any entry.
vi.setConfig({ testTimeout: 120_000 });

const REDIRECT = `${ORIGIN}/console/sso/callback`;
const SECRET = 'sso-audit-client-secret-0123456789abcdef';
const UA = 'audit-sso-browser/1.0';
const clock = manualClock(Date.now());
/** Every secret of the round trips: the client secret, codes, states, the session cookies and tokens. */
const secrets = new Set<string>([SECRET]);
let t: TestApp;
let idp: OidcProvider;
let admin: Awaited<ReturnType<typeof adminOf>>;
beforeAll(async () => {
  idp = await startOidcProvider({
    clients: [{ client_id: 'wsvc-audit', client_secret: SECRET, redirect_uris: [REDIRECT] }],
  });
  t = await startTestApp({ clock, config: { PUBLIC_URL: ORIGIN, SSO_ALLOW_HTTP_ISSUER: true } });
  admin = await adminOf(t, 'Sso audit');
  const put = await admin.client.call({
    method: 'PUT',
    url: '/console/api/sso',
    ws: admin.ws,
    body: {
      issuer: idp.issuer,
      client_id: 'wsvc-audit',
      client_secret: SECRET,
      allowed_domains: ['sso-audit.test'],
      default_role: 'member',
      required: false,
    },
  });
  expect(put.statusCode, put.body).toBe(200);
});
afterAll(async () => {
  await t?.close();
  await idp?.close();
});

/** The sign-in page's start, then the provider's redirects as a browser follows them: the callback's query and cookie. */
async function roundTrip(email: string): Promise<{ query: string; cookie: string }> {
  const res = await t.request({
    method: 'POST',
    url: '/console/api/sso/start',
    body: { workspace_id: admin.ws, email },
    headers: { origin: ORIGIN, 'user-agent': UA },
  });
  expect(res.statusCode, res.body).toBe(200);
  const cookie = String(res.headers['set-cookie']).split(';')[0] as string;
  secrets.add(cookie.slice(cookie.indexOf('=') + 1));
  const query = await followToRedirect(json(res).data.authorization_url as string, REDIRECT);
  const params = new URLSearchParams(query);
  for (const name of ['code', 'state']) secrets.add(params.get(name) ?? '');
  return { query, cookie };
}

/** The console's callback page posting the provider's answer. */
function callback(query: string, cookie?: string) {
  return t.request({
    method: 'POST',
    url: '/console/api/sso/callback',
    body: { query },
    headers: { origin: ORIGIN, 'user-agent': UA, ...(cookie ? { cookie } : {}) },
  });
}

function expectOrigin(e: StoredEntry, res: LightMyRequestResponse) {
  expect({ request_id: e.request_id, ip: e.ip, user_agent: e.user_agent }).toEqual({
    request_id: res.headers['x-request-id'],
    ip: '127.0.0.1',
    user_agent: UA,
  });
}

describe('session.signed_in through the single sign-on callback', () => {
  it("a member's sign-in through the provider is one entry, by that member, on the session, method sso", async () => {
    const email = 'grace@sso-audit.test';
    // The first arrival makes the member (member.invited) and signs them in.
    const first = await roundTrip(email);
    let res!: LightMyRequestResponse;
    const arrival = await entriesOf(t, admin.ws, async () => {
      res = await callback(first.query, first.cookie);
    });
    const grace = clientOf(t, res);
    secrets.add(grace.cookie.slice(grace.cookie.indexOf('=') + 1));
    secrets.add(grace.csrf);
    const me = json(await grace.call({ method: 'GET', url: '/console/api/v1/users/me', ws: admin.ws })).data;
    const graceId = me.id as string;
    expect(arrival.map((e) => [e.action, e.actor_id, e.target_type, e.target_id])).toEqual([
      ['member.invited', graceId, 'user', graceId],
      ['session.signed_in', graceId, 'session', grace.session.session_id],
    ]);

    // Signing in again: exactly one entry.
    const next = await roundTrip(email);
    const again = await entriesOf(t, null, async () => {
      res = await callback(next.query, next.cookie);
    });
    const session = clientOf(t, res);
    secrets.add(session.cookie.slice(session.cookie.indexOf('=') + 1));
    const s = onlyEntry(again, 'session.signed_in');
    expect({ workspace: s.workspace_id, type: s.actor_type, id: s.actor_id, name: s.actor_name }).toEqual({
      workspace: admin.ws,
      type: 'user',
      id: graceId,
      name: me.name ?? email,
    });
    expect({ type: s.target_type, id: s.target_id, env: s.env }).toEqual({
      type: 'session',
      id: session.session.session_id,
      env: null,
    });
    expect(s.changes).toEqual({
      method: { before: null, after: 'sso' },
      stage: { before: null, after: session.session.stage ?? 'full' },
    });
    expectOrigin(s, res);
  });

  it('a refused callback leaves no entry: a forged state, a replayed answer, no cookie', async () => {
    const { query, cookie } = await roundTrip('hopper@sso-audit.test');
    const forged = new URLSearchParams(query);
    forged.set('state', 'not-the-state-of-this-sign-in');
    // The right answer from a browser that did not start it (no cookie).
    const elsewhere = await roundTrip('hopper@sso-audit.test');
    expect(
      await entriesOf(t, null, async () => {
        expectError(await callback(forged.toString(), cookie), 400, 'sso_state_invalid');
        expectError(await callback(elsewhere.query), 400, 'sso_state_invalid');
      }),
    ).toEqual([]);
    // The right answer signs in once; the same answer again is refused and records nothing.
    expect((await entriesOf(t, admin.ws, () => callback(query, cookie))).map((e) => e.action)).toEqual([
      'member.invited',
      'session.signed_in',
    ]);
    expect(
      await entriesOf(t, null, async () => {
        expectError(await callback(query, cookie), 400, 'sso_state_invalid');
      }),
    ).toEqual([]);
  });

  it('no client secret, code, state, cookie or CSRF token in any entry', async () => {
    const text = JSON.stringify(await storedEntries(t));
    secrets.delete('');
    expect(secrets.size).toBeGreaterThan(8);
    for (const secret of secrets) expect(text.includes(secret), `an entry holds ${secret.slice(0, 4)}…`).toBe(false);
    // The settings' entry names the client secret only as redacted.
    expect(text).toContain('[redacted]');
  });
});
