import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { asCli, startTestApp, type TestApp } from '../helpers/app.js';
import { ORIGIN, signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';

// Backends: both — session and link lifetimes are stored and compared on each database
// Tier: full — console sign-ins over HTTP (each a password hash: scrypt, at the suite's lower cost of vitest.config.ts); five sessions run to their expiry

vi.setConfig({ testTimeout: 120_000 });

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
let now = Date.parse('2026-11-22T10:00:00.000Z');
let t: TestApp;
let n = 0;
beforeAll(async () => {
  t = await startTestApp({ config: { PUBLIC_URL: ORIGIN }, clock: { now: () => now } });
});
afterAll(() => t.close());

/** A new workspace admin, signed in at the current clock time. */
async function signedIn(app = t) {
  const out = await app.services.workspaces.create(asCli(app.services), {
    name: 'Clock',
    adminEmail: `clock${++n}-${Date.now()}@example.test`,
  });
  const c = await signInWithLink(app, out.set_password_url);
  return { ...c, workspaceId: out.workspace.id, alive: () => c.call({ method: 'GET', url: '/console/api/session' }) };
}

describe('console session lifetimes on the injected clock (docs/console.md#sessions)', () => {
  it('default: ends at exactly 30 idle minutes, not a millisecond before', async () => {
    const a = await signedIn();
    const b = await signedIn();
    now += 30 * MINUTE - 1;
    expect((await a.alive()).statusCode).toBe(200);
    now += 1;
    expectError(await b.alive(), 401, 'unauthenticated');
  });

  it('each request slides the idle deadline', async () => {
    const a = await signedIn();
    now += 20 * MINUTE;
    expect((await a.alive()).statusCode).toBe(200); // deadline now 20 + 30 minutes after sign-in
    now += 30 * MINUTE - 1;
    expect((await a.alive()).statusCode).toBe(200);
    now += 30 * MINUTE;
    expectError(await a.alive(), 401, 'unauthenticated');
  });

  it('ends at exactly 12 hours after sign-in though used all along; the cookie says so too', async () => {
    const a = await signedIn();
    const start = now;
    while (now + 25 * MINUTE < start + 12 * HOUR) {
      now += 25 * MINUTE;
      expect((await a.alive()).statusCode, `${(now - start) / MINUTE} min`).toBe(200);
    }
    now = start + 12 * HOUR - 1;
    const last = await a.alive();
    expect(last.statusCode).toBe(200);
    expect(JSON.parse(last.body).data.expires_at).toBe(new Date(start + 12 * HOUR).toISOString());
    now = start + 12 * HOUR;
    expectError(await a.alive(), 401, 'unauthenticated');

    const res = await t.request({
      method: 'POST',
      url: '/console/api/session',
      body: { email: a.session.email, password: 'correct horse battery' },
      headers: { origin: ORIGIN },
    });
    expect(String(res.headers['set-cookie'])).toMatch(/Max-Age=43200;/);
  });

  it('links expire: an invite after 7 days', async () => {
    const a = await signedIn();
    const late = await t.services.members.invite(asCli(t.services), a.workspaceId, {
      email: `late${++n}@example.test`,
      role: 'member',
    });
    now += 7 * 24 * HOUR + 1;
    const res = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body: { token: new URL(late.invite_url).searchParams.get('token'), password: 'long enough password' },
      headers: { origin: ORIGIN },
    });
    expectError(res, 400, 'invalid_link');
  });

  it('both lifetimes are settings', async () => {
    const custom = await startTestApp({
      config: { PUBLIC_URL: ORIGIN, CONSOLE_SESSION_IDLE_MIN: 5, CONSOLE_SESSION_MAX_H: 1 },
      clock: { now: () => now },
    });
    try {
      const a = await signedIn(custom);
      const b = await signedIn(custom);
      const start = now;
      now += 5 * MINUTE - 1;
      expect((await a.alive()).statusCode).toBe(200);
      now += 1;
      expectError(await b.alive(), 401, 'unauthenticated');
      while (now + 4 * MINUTE < start + HOUR) {
        now += 4 * MINUTE;
        expect((await a.alive()).statusCode).toBe(200);
      }
      now = start + HOUR;
      expectError(await a.alive(), 401, 'unauthenticated');
    } finally {
      await custom.close();
    }
  });
});
