import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { asCli, json, startTestApp, type TestApp } from '../helpers/app.js';
import { linkToken, ORIGIN, PASSWORD, signIn, signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';

// Backends: both — sessions, reset links and sign-in throttling counts live in the database
// Tier: full — about 70 console sign-ins and password checks (scrypt, at the suite's lower cost of vitest.config.ts): sign-in throttling and password checks
// The console against an ASVS level 2 review. Both databases (this file runs in both projects).
vi.setConfig({ testTimeout: 180_000 });

let n = 0;
const email = (what: string) => `${what}${++n}-${Date.now()}@example.test`;

/** The app's log lines, as written (after redaction). */
function logSink() {
  const lines: string[] = [];
  return { lines, stream: { write: (line: string) => void lines.push(line) } };
}

describe('no credentials in the logs, at debug level, for a full console journey', () => {
  const log = logSink();
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      config: { PUBLIC_URL: ORIGIN, LOG_LEVEL: 'debug', WEBHOOK_ALLOW_INSECURE_URLS: true },
      logStream: log.stream,
    });
  });
  afterAll(() => t.close());

  it('every token, key, secret, cookie and CSRF token made in the journey is absent from every line', async () => {
    const secrets: Record<string, string> = {};
    const out = await t.services.workspaces.create(asCli(t.services), { name: 'Logs', adminEmail: email('admin') });
    secrets.liveKey = out.keys.live.key;
    secrets.testKey = out.keys.test.key;
    secrets.adminLink = linkToken(out.set_password_url);
    const ws = out.workspace.id;

    // The admin opens their link (the page), sets a password, signs in.
    const page = await t.request({ method: 'GET', url: `/console/set-password?token=${secrets.adminLink}` });
    expect(page.statusCode).toBe(200);
    const admin = await signInWithLink(t, out.set_password_url);
    secrets.cookie = admin.cookie.split('=')[1] as string;
    secrets.csrf = admin.csrf;

    // A wrong password, an API call with a key, a key and a webhook made in the console.
    expectError(
      await t.request({
        method: 'POST',
        url: '/console/api/session',
        body: { email: out.user.email, password: 'a wrong password here' },
        headers: { origin: ORIGIN },
      }),
      401,
      'invalid_credentials',
    );
    expect((await t.request({ method: 'GET', url: '/v1/resources?limit=1', key: secrets.liveKey })).statusCode).toBe(
      200,
    );
    secrets.unknownKey = 'svc_live_notAKeyButShapedLikeOne1234567890';
    expect((await t.request({ method: 'GET', url: '/v1/resources', key: secrets.unknownKey })).statusCode).toBe(401);
    const key = await admin.call({
      method: 'POST',
      url: '/console/api/v1/keys',
      ws,
      body: { name: 'CI', env: 'test' },
    });
    expect(key.statusCode, key.body).toBe(201);
    secrets.consoleKey = json(key).data.key;
    const hook = await admin.call({
      method: 'POST',
      url: '/console/api/v1/webhooks',
      ws,
      body: { url: 'http://127.0.0.1:9/hook', events: ['*'] },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    secrets.webhookSecret = json(hook).data.secret;

    // An invite, opened and used; a forgotten password; an operator's reset link, opened and used.
    const invited = await admin.call({
      method: 'POST',
      url: '/console/api/members',
      ws,
      body: { email: email('member'), role: 'member' },
    });
    expect(invited.statusCode).toBe(201);
    secrets.invite = linkToken(json(invited).data.invite_url);
    await t.request({ method: 'GET', url: `/console/set-password?token=${secrets.invite}` });
    const member = await signInWithLink(t, json(invited).data.invite_url);
    secrets.memberCookie = member.cookie.split('=')[1] as string;
    secrets.memberCsrf = member.csrf;
    const forgot = await t.request({
      method: 'POST',
      url: '/console/api/password/forgot',
      body: { email: out.user.email },
      headers: { origin: ORIGIN },
    });
    expect(forgot.statusCode).toBe(202);
    const reset = await t.services.consoleAuth.resetLink(asCli(t.services), out.user.email);
    secrets.reset = linkToken(reset?.url ?? '');
    await t.request({ method: 'GET', url: `/console/set-password/?token=${secrets.reset}&from=mail` });
    await signInWithLink(t, reset?.url ?? '', 'a second strong passphrase');
    await admin.call({ method: 'DELETE', url: '/console/api/session' });
    secrets.password = PASSWORD;
    // Credentials where they do not belong: only the pattern redaction keeps these out.
    await t.request({ method: 'GET', url: `/v1/resources?key=${secrets.testKey}` });
    await t.request({ method: 'GET', url: `/console/sign-in?next=${secrets.consoleKey}&t=${secrets.csrf}` });
    const secretInUrl = encodeURIComponent(secrets.webhookSecret ?? '');
    await t.request({ method: 'GET', url: `/v1/webhooks/${secretInUrl}` });
    secrets.webhookSecretInUrl = secretInUrl.slice(6);
    const text = log.lines.join('');
    expect(log.lines.length).toBeGreaterThan(30);
    expect(text).toContain('"url":"/console/set-password?[redacted]"');
    expect(text).toContain('"url":"/console/set-password/?[redacted]"');
    expect(text).toContain('"url":"/v1/resources?limit=1"');
    const requested = log.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'password reset requested');
    expect(requested).toEqual([expect.objectContaining({ level: 30, user_ids: [out.user.id] })]);
    expect(text).not.toMatch(/reset_url|token=/);
    for (const [what, secret] of Object.entries(secrets)) {
      expect(secret.length, what).toBeGreaterThan(9);
      expect(text.includes(secret), `${what} is in the log`).toBe(false);
    }
    // Every line is still JSON.
    for (const line of log.lines) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('forgot password: the reset link only by email (the outbox), never returned; unknown emails the same 202', async () => {
    const out = await t.services.workspaces.create(asCli(t.services), { name: 'Forgot', adminEmail: email('forgot') });
    expect(await t.services.consoleAuth.forgotPassword(out.user.email.toUpperCase())).toEqual({
      userIds: [out.user.id],
    });
    expect(await t.services.consoleAuth.forgotPassword(email('nobody'))).toEqual({ userIds: [] });
    const resets = (await t.services.notifications.ofUser(out.workspace.id, out.user.id)).filter(
      (r) => r.type === 'password.reset',
    );
    expect(resets).toHaveLength(1);
    const id = resets[0]?.id ?? '';
    // Without SMTP_URL the worker keeps it in the local mailbox; the link is in the body only.
    await t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')));
    const kept = (await t.services.notifications.listMail(200)).find((m) => m.notification_id === id);
    const body = (await t.services.notifications.findMail(kept?.id ?? ''))?.text ?? '';
    const url = /(http\S+token=\S+)/.exec(body)?.[1];
    expect(url?.startsWith(`${ORIGIN}/console/set-password?token=`)).toBe(true);
    // Once sent, the outbox forgets the link (only its digest and the email hold it).
    expect(await t.services.notifications.find(id)).toMatchObject({ status: 'sent', secret: null });
    await signInWithLink(t, url ?? '', 'a reset by email works');
    expect(await t.services.consoleAuth.resetLink(asCli(t.services), email('nobody'))).toBeUndefined();
    const unknown = await t.request({
      method: 'POST',
      url: '/console/api/password/forgot',
      body: { email: email('nobody') },
      headers: { origin: ORIGIN },
    });
    expect(unknown.statusCode).toBe(202);
  });
});

/** A sign-in from a client address (as the trusted proxy names it in X-Forwarded-For). */
const signInFrom = (t: TestApp, forwardedFor: string, who: string, password: string) =>
  t.request({
    method: 'POST',
    url: '/console/api/session',
    body: { email: who, password },
    headers: { origin: ORIGIN, 'x-forwarded-for': forwardedFor },
  });

describe('sign-in throttling behind a trusted proxy (TRUST_PROXY)', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Requests injected by the test come from 127.0.0.1: the proxy.
    t = await startTestApp({ config: { PUBLIC_URL: ORIGIN, TRUST_PROXY: '127.0.0.1' } });
  });
  afterAll(() => t.close());

  it('50 failures for 50 invented emails lock out that client only; the admin signs in from elsewhere', async () => {
    const out = await t.services.workspaces.create(asCli(t.services), { name: 'Proxy', adminEmail: email('admin') });
    await signInWithLink(t, out.set_password_url);
    const attacker = '203.0.113.7';
    for (let batch = 0; batch < 5; batch++) {
      const tries = Array.from({ length: 10 }, () => signInFrom(t, attacker, email('invented'), 'not the password'));
      for (const res of await Promise.all(tries)) expectError(res, 401, 'invalid_credentials');
    }
    const locked = await signInFrom(t, attacker, out.user.email, PASSWORD);
    expectError(locked, 429, 'rate_limited');
    expect(locked.headers['retry-after']).toBe('900');
    expect((await signInFrom(t, '198.51.100.2', out.user.email, PASSWORD)).statusCode).toBe(201);
    // The proxy's own address (no X-Forwarded-For) is not the attacker's either.
    expect((await signIn(t, out.user.email)).session.email).toBe(out.user.email);
  });

  it("5 guesses at the admin's password lock that client out of that account, not the admin", async () => {
    const out = await t.services.workspaces.create(asCli(t.services), { name: 'Guess', adminEmail: email('admin') });
    await signInWithLink(t, out.set_password_url);
    const attacker = '203.0.113.8, 10.0.0.1';
    for (let i = 0; i < 5; i++) {
      expectError(await signInFrom(t, attacker, out.user.email, `guess number ${i}`), 401, 'invalid_credentials');
    }
    expectError(await signInFrom(t, attacker, out.user.email, PASSWORD), 429, 'rate_limited');
    const admin = await signInFrom(t, '198.51.100.3', out.user.email, PASSWORD);
    expect(admin.statusCode).toBe(201);
    const cookie = String(admin.headers['set-cookie']).split(';')[0] as string;
    const sessions = json(await t.request({ method: 'GET', url: '/console/api/sessions', headers: { cookie } })).data;
    expect(sessions.find((s: { current: boolean }) => s.current).ip).toBe('198.51.100.3');
  });

  it('without TRUST_PROXY, X-Forwarded-For is ignored: the connecting address counts', async () => {
    const direct = await startTestApp({ config: { PUBLIC_URL: ORIGIN } });
    try {
      const out = await direct.services.workspaces.create(asCli(direct.services), {
        name: 'Direct',
        adminEmail: email('admin'),
      });
      await signInWithLink(direct, out.set_password_url);
      const res = await signInFrom(direct, '198.51.100.4', out.user.email, PASSWORD);
      const cookie = String(res.headers['set-cookie']).split(';')[0] as string;
      const sessions = json(
        await direct.request({ method: 'GET', url: '/console/api/sessions', headers: { cookie } }),
      ).data;
      expect(sessions.find((s: { current: boolean }) => s.current).ip).toBe('127.0.0.1');
    } finally {
      await direct.close();
    }
  });
});

describe('sessions, caching and passwords', () => {
  let t: TestApp;
  let now = Date.parse('2026-11-24T09:00:00.000Z');
  beforeAll(async () => {
    t = await startTestApp({ config: { PUBLIC_URL: ORIGIN }, clock: { now: () => now } });
  });
  afterAll(() => t.close());

  it('a session lasts 30 idle minutes and 12 hours in all by default (cookie Max-Age 12 h)', async () => {
    const out = await t.services.workspaces.create(asCli(t.services), { name: 'Session', adminEmail: email('admin') });
    const set = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body: { token: linkToken(out.set_password_url), password: PASSWORD },
      headers: { origin: ORIGIN },
    });
    expect(set.statusCode).toBe(200);
    const res = await signInFrom(t, '192.0.2.1', out.user.email, PASSWORD);
    expect(res.statusCode).toBe(201);
    expect(String(res.headers['set-cookie'])).toMatch(/Max-Age=43200;/);
    expect(json(res).data.expires_at).toBe(new Date(now + 12 * 3600_000).toISOString());
    const cookie = String(res.headers['set-cookie']).split(';')[0] as string;
    now += 30 * 60_000;
    expectError(
      await t.request({ method: 'GET', url: '/console/api/session', headers: { cookie } }),
      401,
      'unauthenticated',
    );
  });

  it('Cache-Control: no-store on every console page, the served set-password file included, and API answers', async () => {
    const out = await t.services.workspaces.create(asCli(t.services), { name: 'Cache', adminEmail: email('admin') });
    for (const url of [
      `/console/set-password?token=${linkToken(out.set_password_url)}`,
      '/console/',
      '/console',
      '/console/sign-in',
      '/console/index.html',
    ]) {
      const res = await t.request({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type'], url).toMatch(/^text\/html/);
      expect(res.headers['cache-control'], url).toBe('no-store');
    }
    const admin = await signInWithLink(t, out.set_password_url);
    const ws = out.workspace.id;
    const answers = [
      await admin.call({ method: 'GET', url: '/console/api/session' }),
      await admin.call({ method: 'GET', url: '/console/api/sessions' }),
      await admin.call({
        method: 'POST',
        url: '/console/api/members',
        ws,
        body: { email: email('m'), role: 'viewer' },
      }),
      await admin.call({ method: 'POST', url: '/console/api/v1/keys', ws, body: { name: 'k', env: 'live' } }),
      await admin.call({ method: 'GET', url: '/console/api/v1/users', ws }),
    ];
    for (const res of answers) {
      expect(res.statusCode, res.body).toBeLessThan(300);
      expect(res.headers['cache-control']).toBe('no-store');
    }
    const html = (await t.request({ method: 'GET', url: '/console/' })).body;
    const asset = /\/console\/assets\/[^"]+\.js/.exec(html)?.[0] as string;
    const js = await t.request({ method: 'GET', url: asset });
    expect(js.statusCode).toBe(200);
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  });

  it('common and breached-pattern passwords are refused with a message that says why; the link stays usable', async () => {
    const out = await t.services.workspaces.create(asCli(t.services), { name: 'Weak', adminEmail: email('weak') });
    const token = linkToken(out.set_password_url);
    const setTo = (password: string) =>
      t.request({
        method: 'POST',
        url: '/console/api/password/set',
        body: { token, password },
        headers: { origin: ORIGIN },
      });
    const cases: [string, RegExp][] = [
      ['password123', /found most often in breaches/],
      ['1234567890', /hundred most used/],
      ['P@ssw0rd2024', /small change to a password found often in breaches/],
      ['qwertyuiop12', /small change|keyboard|row/],
      ['aaaaaaaaaaaa', /repeats one character/],
      [`${out.user.email}1`, /contains your email/],
    ];
    for (const [password, why] of cases) {
      const res = await setTo(password);
      expectError(res, 400, 'validation_error');
      expect(json(res).error.details[0], password).toMatchObject({ field: 'password', issue: 'too_common' });
      expect(json(res).error.message, password).toMatch(why);
    }
    // The check costs CPU: only a live link's holder gets it (an unknown link is invalid_link first).
    const unknownLink = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body: { token: 'A'.repeat(43), password: 'password123' },
      headers: { origin: ORIGIN },
    });
    expectError(unknownLink, 400, 'invalid_link');
    expect((await setTo('a river of quiet lanterns')).statusCode).toBe(200);
    const a = await signIn(t, out.user.email, 'a river of quiet lanterns');
    const change = await a.call({
      method: 'POST',
      url: '/console/api/password/change',
      body: { current_password: 'a river of quiet lanterns', new_password: 'iloveyou2020!' },
    });
    expectError(change, 400, 'validation_error');
    expect(json(change).error.details[0]).toMatchObject({ field: 'new_password', issue: 'too_common' });
  });
});
