import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { ORIGIN, signInWithLink } from './helpers/console.js';
import { expectError } from './helpers/expect.js';

vi.setConfig({ testTimeout: 120_000 });

const HOUR = 3600_000;
let now = Date.parse('2026-11-22T10:00:00.000Z');
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { PUBLIC_URL: ORIGIN }, clock: { now: () => now } });
});
afterAll(() => t.close());

describe('console session lifetimes on the injected clock (docs/console.md)', () => {
  it('ends after 12 idle hours; requests keep it alive, but never past 30 days; links expire', async () => {
    const out = await t.services.workspaces.create({ name: 'Clock', adminEmail: `clock${Date.now()}@example.test` });
    const a = await signInWithLink(t, out.set_password_url);
    const alive = () => a.call({ method: 'GET', url: '/console/api/session' });
    now += 11 * HOUR;
    expect((await alive()).statusCode).toBe(200);
    now += 11 * HOUR; // 22 h after sign-in, 11 h after the last request
    expect((await alive()).statusCode).toBe(200);
    for (let h = 22; h < 30 * 24 - 11; h += 11) {
      now += 11 * HOUR;
      expect((await alive()).statusCode, `at ${h + 11} h`).toBe(200);
    }
    now += 11 * HOUR; // past 30 days since sign-in, though not idle
    expectError(await alive(), 401, 'unauthenticated');

    const b = await signInWithLink(
      t,
      (
        await t.services.consoleAuth.invite(out.workspace.id, {
          email: `idle${Date.now()}@example.test`,
          role: 'viewer',
        })
      ).invite_url,
    );
    now += 12 * HOUR + 1;
    expectError(await b.call({ method: 'GET', url: '/console/api/session' }), 401, 'unauthenticated');

    const late = await t.services.consoleAuth.invite(out.workspace.id, {
      email: `late${Date.now()}@example.test`,
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
});
