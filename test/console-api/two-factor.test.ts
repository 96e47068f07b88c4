// Backends: both — second factors, pending sign-ins, the throttle and notifications are rows in the database.
// Tier: full — console sign-ins over HTTP (each a password hash: scrypt, at the suite's lower cost of vitest.config.ts), with each factor's enrolment and sign-in
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { stepAt, totpCode } from '../../src/modules/mfa/totp.js';
import { asCli, json, startTestApp, type TestApp } from '../helpers/app.js';
import { ORIGIN, PASSWORD } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { adminOf, clientOf, enrolTotp, manualClock, postPassword, postSecondFactor } from '../helpers/two-factor.js';

// Every sign-in costs one scrypt hash (at the suite's lower cost, vitest.config.ts).
vi.setConfig({ testTimeout: 120_000 });

// The first millisecond of a 30-second step, in the future so that sessions made now stay open.
const T0 = (stepAt(Date.now()) + 10) * 30_000;
const clock = manualClock(T0);
const log: string[] = [];
/** Every answer the tests received, and the secrets they were shown once (the last test greps for them). */
const answers: { method: string; url: string; body: string }[] = [];
const secrets = new Set<string>();
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    clock,
    config: { PUBLIC_URL: ORIGIN, LOG_LEVEL: 'debug' },
    logStream: { write: (line: string) => void log.push(line) },
  });
  const request = t.request.bind(t);
  t.request = async (opts) => {
    const res = await request(opts);
    answers.push({ method: opts.method, url: opts.url, body: res.body });
    if (res.statusCode < 300 && /\/two-factor\/(totp|totp\/confirm|recovery-codes)$/.test(opts.url)) {
      const data = JSON.parse(res.body).data;
      if (data.secret) secrets.add(data.secret);
      for (const c of data.recovery_codes ?? []) secrets.add(c);
    }
    return res;
  };
});
afterAll(() => t.close());

async function notices(userId: string, type: string): Promise<string[]> {
  const rows = await t.storage.db
    .selectFrom('notifications')
    .select('data')
    .where('user_id', '=', userId)
    .where('type', '=', type as never)
    .execute();
  return rows.map((r) => r.data);
}

describe('two-factor codes (TOTP, docs/sign-in.md#two-factor-codes)', () => {
  it('enrols with a QR code and a code, answers 10 recovery codes once, and never shows the secret again', async () => {
    clock.set(T0);
    const { client, userId, email } = await adminOf(t, 'Enrol');
    const start = await client.call({ method: 'POST', url: '/console/api/two-factor/totp' });
    expect(start.statusCode).toBe(201);
    const { secret, uri, qr_svg } = json(start).data;
    expect(uri).toContain(`secret=${secret}`);
    expect(qr_svg).toMatch(/^<svg /);
    // Not on until a code proves the app has the secret.
    expectError(
      await client.call({ method: 'POST', url: '/console/api/two-factor/totp/confirm', body: { code: '000000' } }),
      400,
      'validation_error',
    );
    expect(json(await client.call({ method: 'GET', url: '/console/api/two-factor' })).data.totp_enabled).toBe(false);
    const confirm = await client.call({
      method: 'POST',
      url: '/console/api/two-factor/totp/confirm',
      body: { code: totpCode(secret, T0) },
    });
    expect(confirm.statusCode).toBe(200);
    const codes: string[] = json(confirm).data.recovery_codes;
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    const status = await client.call({ method: 'GET', url: '/console/api/two-factor' });
    expect(json(status).data).toEqual({ totp_enabled: true, recovery_codes_left: 10, passkeys: [] });
    expect(status.body).not.toContain(secret);
    // A second enrolment while on is refused: turn it off first.
    expectError(
      await client.call({ method: 'POST', url: '/console/api/two-factor/totp' }),
      409,
      'totp_already_enabled',
    );
    // Stored hashed: no recovery code in the database, and the person is told (without any secret).
    const stored = JSON.stringify(
      await t.storage.db.selectFrom('console_recovery_codes').selectAll().where('email', '=', email).execute(),
    );
    for (const c of codes) expect(stored).not.toContain(c.replace(/-/g, ''));
    const told = await notices(userId, 'mfa.enabled');
    expect(told).toHaveLength(1);
    for (const s of [secret, ...codes]) expect(JSON.stringify(told)).not.toContain(s);
  });

  it('asks for the code after the password; a code works once; one step of drift is accepted, two are not', async () => {
    clock.set(T0);
    const { client, email, userId } = await adminOf(t, 'Steps');
    const { secret } = await enrolTotp(client, T0);
    const first = await postPassword(t, email);
    expect(first.statusCode).toBe(202);
    expect(first.headers['set-cookie']).toBeUndefined();
    const pending = json(first).data;
    expect(pending).toMatchObject({ second_factor_required: true, methods: ['totp', 'recovery_code'] });
    // The enrolment's code (step T0) was used: the same step is a replay, refused, and the person is told.
    expectError(await postSecondFactor(t, { token: pending.token, code: totpCode(secret, T0) }), 401, 'invalid_code');
    expect(await notices(userId, 'mfa.code_reused')).toHaveLength(1);
    // One step later the next step's code is accepted.
    clock.set(T0 + 30_000);
    const ok = await postSecondFactor(t, { token: pending.token, code: totpCode(secret, T0 + 30_000) });
    const session = clientOf(t, ok).session;
    expect(session).toMatchObject({ method: 'password+totp', stage: 'full' });
    // The pending sign-in worked once.
    expectError(
      await postSecondFactor(t, { token: pending.token, code: totpCode(secret, T0 + 60_000) }),
      401,
      'invalid_credentials',
    );
    // Drift: at the last millisecond of step N+1 a code of step N is accepted (one step behind)…
    const n = T0 + 120_000;
    clock.set(n + 60_000 - 1);
    const again = json(await postPassword(t, email)).data.token;
    expect((await postSecondFactor(t, { token: again, code: totpCode(secret, n) })).statusCode).toBe(201);
    // …and at the first millisecond of step N+3 the (unused) code of step N+1 is two behind: refused.
    clock.set(n + 90_000);
    const late = json(await postPassword(t, email)).data.token;
    expectError(await postSecondFactor(t, { token: late, code: totpCode(secret, n + 30_000) }), 401, 'invalid_code');
    // A code one step ahead (a phone's clock fast) is accepted.
    expect((await postSecondFactor(t, { token: late, code: totpCode(secret, n + 120_000) })).statusCode).toBe(201);
  });

  it('a recovery code signs in once, and the person is told how many are left', async () => {
    clock.set(T0);
    const { client, email, userId } = await adminOf(t, 'Recovery');
    const { codes } = await enrolTotp(client, T0);
    const token = json(await postPassword(t, email)).data.token;
    const ok = await postSecondFactor(t, { token, recovery_code: (codes[3] as string).toLowerCase() });
    expect(clientOf(t, ok).session).toMatchObject({ method: 'password+recovery_code' });
    const again = json(await postPassword(t, email)).data.token;
    expectError(await postSecondFactor(t, { token: again, recovery_code: codes[3] as string }), 401, 'invalid_code');
    const told = await notices(userId, 'recovery_code.used');
    expect(told.map((d) => JSON.parse(d).factor.remaining)).toEqual([9]);
    const status = await client.call({ method: 'GET', url: '/console/api/two-factor' });
    expect(json(status).data.recovery_codes_left).toBe(9);
  });

  it('wrong codes count toward the sign-in throttle: 5 for an email from one address, then 429 even with the right code', async () => {
    clock.set(T0);
    const { client, email } = await adminOf(t, 'Throttle');
    const { secret } = await enrolTotp(client, T0);
    clock.set(T0 + 30_000);
    const token = json(await postPassword(t, email)).data.token;
    for (let i = 0; i < 5; i++) {
      expectError(await postSecondFactor(t, { token, code: String(100000 + i) }), 401, 'invalid_code');
    }
    const blocked = await postSecondFactor(t, { token, code: totpCode(secret, T0 + 30_000) });
    expectError(blocked, 429, 'rate_limited');
    expect(blocked.headers['retry-after']).toBe('900');
    expectError(await postPassword(t, email), 429, 'rate_limited');
    // The window moves on after 15 minutes.
    clock.set(T0 + 15 * 60_000 + 30_000);
    const later = json(await postPassword(t, email)).data.token;
    expect((await postSecondFactor(t, { token: later, code: totpCode(secret, clock.now()) })).statusCode).toBe(201);
  });

  it('a pending sign-in expires after 5 minutes', async () => {
    clock.set(T0);
    const { client, email } = await adminOf(t, 'Expiry');
    const { secret } = await enrolTotp(client, T0);
    const token = json(await postPassword(t, email)).data.token;
    clock.set(T0 + 5 * 60_000);
    expectError(await postSecondFactor(t, { token, code: totpCode(secret, clock.now()) }), 401, 'invalid_credentials');
  });

  it('turning TOTP off needs the password and a code; then the password alone signs in', async () => {
    clock.set(T0);
    const { client, email, userId } = await adminOf(t, 'Disable');
    const { secret, codes } = await enrolTotp(client, T0);
    clock.set(T0 + 30_000);
    const code = totpCode(secret, clock.now());
    const off = (body: object) => client.call({ method: 'POST', url: '/console/api/two-factor/totp/disable', body });
    expect(
      expectError(await off({ password: 'not the password', code }), 400, 'validation_error').details?.[0]?.field,
    ).toBe('password');
    expect(
      expectError(await off({ password: PASSWORD, code: '123456' }), 400, 'validation_error').details?.[0]?.field,
    ).toBe('code');
    // New recovery codes also need both; the old ones stop working.
    const regen = await client.call({
      method: 'POST',
      url: '/console/api/two-factor/recovery-codes',
      body: { password: PASSWORD, code },
    });
    expect(regen.statusCode).toBe(200);
    const fresh: string[] = json(regen).data.recovery_codes;
    expect(fresh.some((c) => codes.includes(c))).toBe(false);
    expect(await notices(userId, 'recovery_codes.regenerated')).toHaveLength(1);
    // The code just used is not accepted twice; a recovery code does the job.
    expectError(await off({ password: PASSWORD, code }), 400, 'validation_error');
    expect((await off({ password: PASSWORD, code: fresh[0] })).statusCode).toBe(204);
    expect(await notices(userId, 'mfa.disabled')).toHaveLength(1);
    expect((await postPassword(t, email)).statusCode).toBe(201);
    expect(
      await t.storage.db.selectFrom('console_recovery_codes').selectAll().where('email', '=', email).execute(),
    ).toEqual([]);
  });

  it('a password set from a reset link does not skip the second factor', async () => {
    clock.set(T0);
    const { client, email } = await adminOf(t, 'Reset link');
    const { secret } = await enrolTotp(client, T0);
    const link = await t.services.consoleAuth.resetLink(asCli(t.services), email);
    const set = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body: { token: new URL(link?.url ?? '').searchParams.get('token'), password: 'another good passphrase' },
      headers: { origin: ORIGIN },
    });
    expect(set.statusCode, set.body).toBe(202);
    expect(set.headers['set-cookie']).toBeUndefined();
    const pending = json(set).data;
    expect(pending.methods).toContain('totp');
    clock.set(T0 + 30_000);
    const ok = await postSecondFactor(t, { token: pending.token, code: totpCode(secret, clock.now()) });
    expect(clientOf(t, ok).session).toMatchObject({ method: 'password+totp' });
  });

  it('no TOTP secret or recovery code is in a later answer, a log line (debug level), a notification or an email', async () => {
    expect(secrets.size).toBeGreaterThan(20);
    await t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')));
    const notifications = JSON.stringify(await t.storage.db.selectFrom('notifications').selectAll().execute());
    const mail = JSON.stringify(await t.storage.db.selectFrom('mailbox').selectAll().execute());
    expect(mail).toContain('Two-factor codes');
    const later = answers.filter((a) => !/\/two-factor\/(totp|totp\/confirm|recovery-codes)$/.test(a.url));
    expect(later.length).toBeGreaterThan(30);
    const logText = log.join('\n');
    expect(logText.length).toBeGreaterThan(0);
    for (const secret of secrets) {
      const bare = secret.replace(/-/g, '');
      for (const [where, text] of [
        ['log', logText],
        ['notifications', notifications],
        ['mailbox', mail],
        ['later answers', later.map((a) => a.body).join('\n')],
      ] as const) {
        expect(text.includes(secret) || text.includes(bare), `${where} holds a secret`).toBe(false);
      }
    }
  });
});
