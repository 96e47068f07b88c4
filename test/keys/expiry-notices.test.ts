import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { asCli, json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { mailTo, type Smtp, startSmtp } from '../helpers/smtp.js';

// Backends: both — each key told once, by two workers on one database
// Tier: quick
// "Key expiring in 7 days" (docs/notifications.md#security-notifications): the
// `key-expiry-notices` job tells a key's owner and the workspace's admins once per key, when its
// expires_at is within the next 7 days, on an injected clock at the exact boundary; the email goes
// over a real SMTP server on loopback, in each recipient's timezone with UTC beside it.
const DAY = 24 * 3_600_000;
const T0 = Date.parse('2026-03-20T12:00:00.000Z');
let nowMs = T0;
const clock = { now: () => nowMs };
let smtp: Smtp;
let t: TestApp;
beforeAll(async () => {
  smtp = await startSmtp();
  t = await startTestApp({
    clock,
    config: { SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, PUBLIC_URL: 'https://console.example.test' },
  });
});
afterAll(async () => {
  await t.close();
  await smtp.close();
});

const job = () => {
  const j = t.services.jobs.find((x) => x.id === 'key-expiry-notices');
  if (!j) throw new Error('no key-expiry-notices job');
  return j;
};
const expiring = async (ws: string) =>
  (
    await t.storage.db
      .selectFrom('notifications')
      .select(['user_id', 'data', 'category'])
      .where('workspace_id', '=', ws)
      .where('type', '=', 'key.expiring')
      .orderBy('user_id')
      .execute()
  ).map((r) => ({
    user: r.user_id,
    category: r.category,
    key: (JSON.parse(r.data) as { key: { id: string } }).key.id,
  }));

async function person(ws: TestWorkspace, role: 'admin' | 'member', timezone: string) {
  const m = await ws.member(role);
  const res = await t.request({ method: 'PATCH', url: '/v1/users/me', key: m.live, body: { timezone } });
  expect(res.statusCode, res.body).toBe(200);
  return { ...m, email: json(res).data.email as string };
}

describe('key expiring in 7 days', () => {
  it('told once per key at exactly 7 days, to the owner and the admins, each in their timezone', async () => {
    nowMs = T0;
    const ws = await newWorkspace(t);
    const owner = await person(ws, 'member', 'Europe/Paris');
    const ny = await person(ws, 'admin', 'America/New_York');
    const kolkata = await person(ws, 'admin', 'Asia/Kolkata');
    // Stops working after Paris moved to summer time (29 March): the email says CEST.
    const expiresAt = '2026-03-31T12:00:00.000Z';
    const e = Date.parse(expiresAt);
    const create = (name: string, at: string) =>
      t.services.keyRegistry.create(asCli(t.services), { userId: owner.userId, env: 'live', name, expiresAt: at });
    const key = await create('Nightly export', expiresAt);
    // Never told: a revoked key, a key that already expired, one expiring later, a rolled key (key.rolled said when).
    const revoked = await create('Revoked', expiresAt);
    await t.services.keyRegistry.revoke(asCli(t.services), revoked.id);
    await create('Past', new Date(T0 - 1).toISOString());
    await create('Later', new Date(e + 8 * DAY).toISOString());
    const rolled = await create('Rolled', new Date(e + DAY).toISOString());
    const roll = await t.request({
      method: 'POST',
      url: `/v1/keys/${rolled.id}/roll`,
      key: owner.live,
      body: { expire_old_in_s: 86_400 },
    });
    expect(roll.statusCode, roll.body).toBe(201);
    await t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')));
    const before = smtp.got.length;

    nowMs = e - 7 * DAY - 1;
    expect(await job().run()).toBe(0);
    expect(await expiring(ws.id)).toEqual([]);

    nowMs = e - 7 * DAY;
    expect(await job().run()).toBe(1);
    const told = [ws.adminId, owner.userId, ny.userId, kolkata.userId].sort();
    expect(await expiring(ws.id)).toEqual(told.map((user) => ({ user, category: 'security', key: key.id })));

    // Again at once, later, and just before it expires: nothing more.
    expect(await job().run()).toBe(0);
    nowMs = e - 1;
    expect(await job().run()).toBe(0);
    expect(await expiring(ws.id)).toHaveLength(4);

    expect(await t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')))).toBe(
      4,
    );
    const mails = smtp.got.slice(before).filter((m) => m.subject?.startsWith('API key expiring'));
    expect(mails).toHaveLength(4);
    const [paris] = mailTo(smtp, owner.email).filter((m) => m.subject?.startsWith('API key expiring'));
    if (!paris) throw new Error('no email to the owner');
    expect(paris.subject).toMatch(
      /^API key expiring in 7 days or less: Nightly export \(live, svc_live_[0-9A-Za-z]{4}…\)$/,
    );
    expect(paris.text).toContain('stops working at 31 Mar 2026, 14:00 CEST (Europe/Paris) · 2026-03-31 12:00 UTC.');
    expect(paris.html).toContain('31 Mar 2026, 14:00 CEST (Europe/Paris) · 2026-03-31 12:00 UTC');
    expect(paris.text).toContain(`https://console.example.test/console/w/${ws.id}/live/settings/keys`);
    expect(paris.text).toContain('Security notifications are always sent');
    expect(paris.headers.get('list-unsubscribe')).toBeUndefined();
    const text = (email: string) =>
      mailTo(smtp, email).find((m) => m.subject?.startsWith('API key expiring'))?.text ?? '';
    expect(text(ny.email)).toContain('31 Mar 2026, 08:00 GMT-4 (America/New_York) · 2026-03-31 12:00 UTC');
    expect(text(kolkata.email)).toContain('31 Mar 2026, 17:30 GMT+5:30 (Asia/Kolkata) · 2026-03-31 12:00 UTC');
  });

  it('two workers running the job at once tell each key once', async () => {
    nowMs = T0;
    const ws = await newWorkspace(t);
    const expiresAt = new Date(T0 + 3 * DAY).toISOString();
    const keys = await Promise.all(
      ['a', 'b', 'c'].map((n) =>
        t.services.keyRegistry.create(asCli(t.services), { userId: ws.adminId, env: 'test', name: n, expiresAt }),
      ),
    );
    const runs = await Promise.all([job().run(), job().run(), job().run()]);
    expect(runs.reduce((a, b) => a + b, 0)).toBe(3);
    const rows = await expiring(ws.id);
    expect(rows.map((r) => r.key).sort()).toEqual(keys.map((k) => k.id).sort());
    expect(rows.every((r) => r.user === ws.adminId)).toBe(true);
  });

  it("a removed owner's key tells no one (it stopped working with the removal)", async () => {
    nowMs = T0;
    const ws = await newWorkspace(t);
    const gone = await ws.member('member');
    await t.services.keyRegistry.create(asCli(t.services), {
      userId: gone.userId,
      env: 'live',
      name: 'Orphan',
      expiresAt: new Date(T0 + DAY).toISOString(),
    });
    await t.services.users.remove(asCli(t.services), gone.userId);
    expect(await job().run()).toBe(0);
    expect(await expiring(ws.id)).toEqual([]);
  });
});
