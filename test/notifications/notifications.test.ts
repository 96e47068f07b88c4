import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { systemActor } from '../../src/kernel/principal.js';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { createNotificationsService } from '../../src/modules/notifications/notifications.service.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { mailTo as smtpMailTo, startSmtp } from '../helpers/smtp.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — notifications written in the transaction of their cause and sent from the outbox
// Tier: quick
// The notification outbox (docs/api.md#notifications): endpoint health writes notifications in the
// transaction of the attempt that causes them; the worker's job sends them over real SMTP to a
// server on loopback (smtp-server, read back with mailparser), on a frozen, injected clock.
const H = 120;
const HOUR = 3_600_000;
const PUBLIC = 'https://console.example.test';

let nowMs = Date.parse('2026-03-27T12:00:00.000Z');
const clock = { now: () => nowMs };
const answers = new Map<string, number>();
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let t: TestApp;
let rx: Receiver;
let worker: DeliveryWorker;
beforeAll(async () => {
  smtp = await startSmtp();
  const config: Partial<Config> = {
    WEBHOOK_ALLOW_INSECURE_URLS: true,
    WEBHOOK_MAX_RETRIES: 0,
    WEBHOOK_TIMEOUT_MS: 2000,
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    MAIL_FROM: 'Workspace Service <notify@example.test>',
    PUBLIC_URL: PUBLIC,
  };
  t = await startTestApp({ config, clock });
  rx = await startReceiver((r) => ({ status: answers.get(r.path) ?? 200 }));
  worker = testWorker(t, { clock, listen: false });
});
afterAll(async () => {
  await worker.stop(1000);
  await rx.close();
  await t.close();
  await smtp.close();
});

const actor = systemActor('scheduler:send-notifications');
const send = () => t.services.notifications.sendDue(t.services.uow.as(actor));
let n = 0;
async function hook(ws: TestWorkspace) {
  const path = `/ntf${++n}`;
  answers.set(path, 500);
  const body = { url: rx.url(path), events: ['*'], label: `Orders ${n}` };
  const res = await t.request({ method: 'POST', url: '/v1/webhooks', key: ws.live, body });
  expect(res.statusCode, res.body).toBe(201);
  return { id: json(res).data.id as string, path, label: `Orders ${n}` };
}
async function attempts(ws: TestWorkspace, atMs: number, count = 1) {
  nowMs = atMs;
  for (let i = 0; i < count; i++) {
    const body = { name: 'R', type: 'standard' };
    expect((await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body })).statusCode).toBe(201);
  }
  await worker.runOnce();
}
async function admin(ws: TestWorkspace, timezone: string) {
  const m = await ws.member('admin');
  const res = await t.request({ method: 'PATCH', url: '/v1/users/me', key: m.live, body: { timezone } });
  expect(res.statusCode, res.body).toBe(200);
  return { ...m, email: json(res).data.email as string };
}
const typesOf = async (ws: TestWorkspace, userId: string) =>
  (await t.services.notifications.ofUser(ws.id, userId))
    .filter((r) => r.category === 'webhooks')
    .map((r) => r.type)
    .reverse();
const mailTo = (email: string) => smtpMailTo(smtp, email).filter((m) => m.subject?.startsWith('Webhook endpoint'));

describe('endpoint notifications by email (docs/api.md#notifications)', () => {
  it('failing (once per 24 h), disabled, recovered: each admin in their timezone, over SMTP', async () => {
    const ws = await newWorkspace(t);
    const paris = await admin(ws, 'Europe/Paris');
    const ny = await admin(ws, 'America/New_York');
    const kolkata = await admin(ws, 'Asia/Kolkata');
    await ws.member('member');
    // Adding the members sent security notifications (docs/notifications.md): out of the way first.
    await send();
    const h = await hook(ws);
    const t0 = Date.parse('2026-03-27T12:00:00.000Z');

    await attempts(ws, t0, 10);
    expect(await typesOf(ws, paris.userId)).toEqual(['endpoint.failing']);
    expect(await send()).toBe(4); // three admins plus the workspace's first admin
    const [failing] = mailTo(paris.email);
    if (!failing) throw new Error('no failing email to the Paris admin');
    expect(failing.subject).toBe(`Webhook endpoint failing: ${h.label}`);
    expect(failing.from?.text).toContain('notify@example.test');
    expect(failing.messageId).toMatch(/^<ntf_[0-9A-Z]{26}@console\.example\.test>$/);
    expect(failing.text).toContain('27 Mar 2026, 13:00 CET (Europe/Paris) · 2026-03-27 12:00 UTC');
    // Disabled after 120 h: across the change to summer time in Paris (29 March).
    expect(failing.text).toContain('1 Apr 2026, 14:00 CEST (Europe/Paris) · 2026-04-01 12:00 UTC');
    const link = `${PUBLIC}/console/w/${ws.id}/live/webhooks/${h.id}`;
    expect(failing.text).toContain(link);
    expect(failing.html).toContain(`href="${link}"`);
    expect(failing.html).toContain('13:00 CET');
    expect(mailTo(ny.email)[0]?.text).toContain('27 Mar 2026, 08:00 GMT-4 (America/New_York) · 2026-03-27 12:00 UTC');
    expect(mailTo(kolkata.email)[0]?.text).toContain('27 Mar 2026, 17:30 GMT+5:30 (Asia/Kolkata)');

    // More final failures within 24 h: no second "failing"; at 24 h: one more.
    await attempts(ws, t0 + HOUR);
    await attempts(ws, t0 + 24 * HOUR - 1);
    expect(await typesOf(ws, paris.userId)).toEqual(['endpoint.failing']);
    await attempts(ws, t0 + 24 * HOUR);
    expect(await typesOf(ws, paris.userId)).toEqual(['endpoint.failing', 'endpoint.failing']);

    await attempts(ws, t0 + H * HOUR);
    expect(await typesOf(ws, paris.userId)).toEqual(['endpoint.failing', 'endpoint.failing', 'endpoint.disabled']);
    await send();
    const disabled = mailTo(paris.email).find((m) => m.subject?.startsWith('Webhook endpoint disabled'));
    expect(disabled?.text).toContain('failed from 27 Mar 2026, 13:00 CET (Europe/Paris)');
    expect(disabled?.text).toContain('to 1 Apr 2026, 14:00 CEST (Europe/Paris) · 2026-04-01 12:00 UTC');

    // Re-enabled: the first success says "recovered", later ones nothing.
    nowMs = t0 + (H + 1) * HOUR;
    const enabled = await t.request({ method: 'POST', url: `/v1/webhooks/${h.id}/enable`, key: ws.live });
    expect(enabled.statusCode).toBe(200);
    answers.set(h.path, 200);
    await attempts(ws, nowMs + 1000);
    await attempts(ws, nowMs + 2000);
    expect(await typesOf(ws, paris.userId)).toEqual([
      'endpoint.failing',
      'endpoint.failing',
      'endpoint.disabled',
      'endpoint.recovered',
    ]);
    expect(await send()).toBe(4);
    expect(mailTo(paris.email).map((m) => m.subject)).toEqual([
      `Webhook endpoint failing: ${h.label}`,
      `Webhook endpoint failing: ${h.label}`,
      `Webhook endpoint disabled: ${h.label}`,
      `Webhook endpoint recovered: ${h.label}`,
    ]);
    // Nothing is sent twice: every notification went out once, and a further run sends nothing.
    expect(await send()).toBe(0);
    const ids = mailTo(paris.email).map((m) => m.messageId);
    expect(new Set(ids).size).toBe(4);
  });

  it('a 451 from the SMTP server is retried after the back-off, and sent once', async () => {
    const ws = await newWorkspace(t);
    const h = await hook(ws);
    await attempts(ws, nowMs + HOUR);
    const [row] = (await t.services.notifications.ofUser(ws.id, ws.adminId)).filter((r) => r.category === 'webhooks');
    if (!row) throw new Error('no notification');
    const before = smtp.got.length;
    smtp.state.reject = 1;
    expect(await send()).toBe(0);
    const retried = await t.services.notifications.find(row.id);
    expect(retried).toMatchObject({ status: 'pending', attempt_count: 1 });
    expect(retried?.last_error).toContain('451');
    expect(Date.parse(retried?.next_attempt_at ?? '')).toBe(nowMs + 60_000);
    nowMs += 60_000 - 1;
    expect(await send()).toBe(0);
    nowMs += 1;
    expect(await send()).toBe(1);
    expect(smtp.got.length).toBe(before + 1);
    expect(smtp.got.at(-1)?.subject).toBe(`Webhook endpoint failing: ${h.label}`);
    expect(await t.services.notifications.find(row.id)).toMatchObject({ status: 'sent', attempt_count: 2 });
  });

  it('without SMTP_URL: kept in the local mailbox, with an info line that holds no link', async () => {
    const logged: { obj: Record<string, unknown>; msg: string }[] = [];
    const mailbox = createNotificationsService({
      db: t.storage.db,
      clock,
      admins: t.services.users.admins,
      userRow: t.services.users.row,
      publicUrl: () => PUBLIC,
      mailFrom: 'Workspace Service <notify@example.test>',
      disableAfterH: H,
      log: { info: (obj, msg) => logged.push({ obj: obj as Record<string, unknown>, msg }), warn() {} },
    });
    const ws = await newWorkspace(t);
    await hook(ws);
    await attempts(ws, nowMs + HOUR);
    expect(await mailbox.sendDue(t.services.uow.as(actor))).toBe(1);
    const [kept] = await mailbox.listMail(1);
    if (!kept) throw new Error('nothing kept');
    const full = await mailbox.findMail(kept.id);
    expect(full?.subject).toMatch(/^Webhook endpoint failing: /);
    expect(full?.text).toContain(`${PUBLIC}/console/w/${ws.id}/live/webhooks/`);
    expect(full?.html).toContain('<a href=');
    expect(full?.message_id).toMatch(/^<ntf_/);
    const line = logged.find((l) => l.obj.mailId === kept.id);
    expect(line?.msg).toContain(`wsvc mail show ${kept.id}`);
    expect(JSON.stringify(line)).not.toContain('http');
    expect(await mailbox.sendDue(t.services.uow.as(actor))).toBe(0);
  });
});
