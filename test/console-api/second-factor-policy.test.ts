// Backends: both — the policy, session stages, resets and their emails are rows in the database.
// Tier: full — console sign-ins over HTTP (each a password hash: scrypt, at the suite's lower cost of vitest.config.ts), for each member the policy reaches
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { stepAt } from '../../src/modules/mfa/totp.js';
import { json, startTestApp, type TestApp } from '../helpers/app.js';
import { linkToken, ORIGIN } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { adminOf, clientOf, enrolTotp, manualClock, postPassword } from '../helpers/two-factor.js';

vi.setConfig({ testTimeout: 120_000 });

const T0 = (stepAt(Date.now()) + 10) * 30_000;
const clock = manualClock(T0);
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ clock, config: { PUBLIC_URL: ORIGIN } });
});
afterAll(() => t.close());

async function invite(admin: Awaited<ReturnType<typeof adminOf>>, role: 'member' | 'viewer') {
  const email = `m${Date.now()}${Math.floor(Math.random() * 1e6)}@example.test`;
  const res = await admin.client.call({
    method: 'POST',
    url: '/console/api/members',
    ws: admin.ws,
    body: { email, role },
  });
  expect(res.statusCode, res.body).toBe(201);
  const set = await t.request({
    method: 'POST',
    url: '/console/api/password/set',
    body: { token: linkToken(json(res).data.invite_url), password: 'correct horse battery' },
    headers: { origin: ORIGIN },
  });
  expect(set.statusCode).toBe(200);
  return { email, userId: json(res).data.user_id as string };
}

describe('the second-factor policy of a workspace (docs/sign-in.md#the-second-factor-policy)', () => {
  it('an admin requires a second factor; members without one enrol at their next sign-in before any other page', async () => {
    clock.set(T0);
    const admin = await adminOf(t, 'Policy');
    const member = await invite(admin, 'member');
    const put = (c: typeof admin.client, on: boolean) =>
      c.call({
        method: 'PUT',
        url: '/console/api/workspace/sign-in-policy',
        ws: admin.ws,
        body: { require_second_factor: on },
      });
    expect(json(await put(admin.client, true)).data).toEqual({ require_second_factor: true });
    const told = await t.storage.db
      .selectFrom('notifications')
      .select(['user_id', 'data'])
      .where('type', '=', 'workspace.settings_changed')
      .where('workspace_id', '=', admin.ws)
      .execute();
    expect(told.map((r) => r.user_id)).toEqual([admin.userId]);

    // The member signs in with the password alone: a session that may only enrol.
    const res = await postPassword(t, member.email);
    const m = clientOf(t, res);
    expect(m.session.stage).toBe('enrol');
    expectError(
      await m.call({ method: 'GET', url: '/console/api/v1/resources', ws: admin.ws }),
      403,
      'second_factor_required',
    );
    expectError(await m.call({ method: 'GET', url: '/console/api/sessions' }), 403, 'second_factor_required');
    // A member cannot change the policy.
    expectError(await put(m, false), 403, 'second_factor_required');
    // Enrolling ends the restriction for this session.
    await enrolTotp(m, T0);
    const now = await m.call({ method: 'GET', url: '/console/api/session' });
    expect(json(now).data.stage).toBe('full');
    expect((await m.call({ method: 'GET', url: '/console/api/v1/resources', ws: admin.ws })).statusCode).toBe(200);
    // A member (not an admin) cannot change the policy or reset anyone.
    expectError(await put(m, false), 403, 'insufficient_scope');
    expectError(
      await m.call({ method: 'DELETE', url: `/console/api/members/${admin.userId}/second-factor`, ws: admin.ws }),
      403,
      'insufficient_scope',
    );
    // Next time, the second factor is asked for.
    clock.set(T0 + 30_000);
    expect((await postPassword(t, member.email)).statusCode).toBe(202);
  });

  it("an admin resets a member's second factor; the member is told by email; the next sign-in enrols again", async () => {
    clock.set(T0);
    const admin = await adminOf(t, 'Reset');
    const member = await invite(admin, 'viewer');
    const m = clientOf(t, await postPassword(t, member.email));
    await enrolTotp(m, T0);
    const list = await admin.client.call({ method: 'GET', url: '/console/api/members/second-factors', ws: admin.ws });
    expect(json(list).data).toEqual(
      expect.arrayContaining([
        { user_id: member.userId, second_factor: true },
        { user_id: admin.userId, second_factor: false },
      ]),
    );
    await admin.client.call({
      method: 'PUT',
      url: '/console/api/workspace/sign-in-policy',
      ws: admin.ws,
      body: { require_second_factor: true },
    });
    const reset = await admin.client.call({
      method: 'DELETE',
      url: `/console/api/members/${member.userId}/second-factor`,
      ws: admin.ws,
    });
    expect(reset.statusCode).toBe(204);
    expectError(
      await admin.client.call({ method: 'DELETE', url: '/console/api/members/usr_nobody/second-factor', ws: admin.ws }),
      404,
      'not_found',
    );
    // Told by email (the local mailbox, without SMTP_URL), naming the admin.
    await t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')));
    const mail = await t.storage.db.selectFrom('mailbox').selectAll().where('to_address', '=', member.email).execute();
    const resetMail = mail.find((x) => x.subject === 'Your second factors were reset by an admin');
    expect(resetMail?.text).toContain(`${admin.email} reset your second factors`);
    // The factors are gone: the password alone gives an enrol-only session (the workspace requires one).
    clock.set(T0 + 30_000);
    const again = await postPassword(t, member.email);
    expect(again.statusCode).toBe(201);
    expect(json(again).data.stage).toBe('enrol');
  });

  it('with the policy off, a person without a second factor signs in with the password alone', async () => {
    clock.set(T0);
    const admin = await adminOf(t, 'Off');
    const res = await postPassword(t, admin.email);
    expect(res.statusCode).toBe(201);
    expect(json(res).data.stage).toBe('full');
  });
});
