import type { ParsedMail } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { type ConsoleClient, ORIGIN, signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { mailTo, type Smtp, startSmtp } from '../helpers/smtp.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — preferences are stored per person and read when notifying
// Tier: full — console sign-ins over HTTP (each a password hash: scrypt, at the suite's lower cost of vitest.config.ts), then a real SMTP round trip per preference
// Notification preferences (docs/notifications.md#preferences): per person and category, email and
// in-app; security cannot be turned off; List-Unsubscribe on optional categories only. A real
// endpoint failing against a loopback receiver, a real SMTP server, console sessions.

// Console sign-ins and password changes hash with scrypt (at the suite's lower cost, vitest.config.ts; several per test here): on a loaded 2-core machine that outgrows the default 30 s.
vi.setConfig({ testTimeout: 120_000 });

let smtp: Smtp;
let t: TestApp;
let rx: Receiver;
let worker: DeliveryWorker;
beforeAll(async () => {
  smtp = await startSmtp();
  t = await startTestApp({
    config: {
      WEBHOOK_ALLOW_INSECURE_URLS: true,
      WEBHOOK_MAX_RETRIES: 0,
      WEBHOOK_TIMEOUT_MS: 2000,
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      PUBLIC_URL: ORIGIN,
    },
  });
  rx = await startReceiver(() => ({ status: 500 }));
  worker = testWorker(t, { listen: false });
});
afterAll(async () => {
  await worker.stop(1000);
  await rx.close();
  await t.close();
  await smtp.close();
});

const send = () => t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')));
async function session(userId: string): Promise<{ client: ConsoleClient; email: string }> {
  const email = (await t.services.users.row(t.storage.db, userId))?.email ?? '';
  const link = await t.services.consoleAuth.makeLink(t.services.uow.as(systemActor('cli')), 'set_password', email, {});
  return { client: await signInWithLink(t, link.url), email };
}
const unsubscribe = (m: ParsedMail | undefined) =>
  m?.headerLines.find((h) => h.key === 'list-unsubscribe')?.line.replace(/^List-Unsubscribe:\s*/i, '');

describe('notification preferences', () => {
  it('per category and channel; security is locked; the endpoint notices follow them', async () => {
    const ws = await newWorkspace(t);
    const a = await session(ws.adminId);
    const ids = {
      b: (await ws.member('admin')).userId,
      c: (await ws.member('admin')).userId,
      d: (await ws.member('admin')).userId,
    };
    const b = await session(ids.b);
    const c = await session(ids.c);
    const d = await session(ids.d);
    const get = (x: ConsoleClient) =>
      x.call({ method: 'GET', url: '/console/api/notifications/preferences', ws: ws.id });
    const put = (x: ConsoleClient, preferences: unknown) =>
      x.call({ method: 'PUT', url: '/console/api/notifications/preferences', ws: ws.id, body: { preferences } });

    const defaults = await get(a.client);
    expect(defaults.statusCode, defaults.body).toBe(200);
    expect(json(defaults).data).toEqual([
      { category: 'security', email: true, in_app: true, locked: true },
      { category: 'webhooks', email: true, in_app: true, locked: false },
      { category: 'usage', email: true, in_app: true, locked: false },
      { category: 'billing', email: true, in_app: true, locked: false },
    ]);
    // Security cannot be turned off, even beside a valid change; bad shapes are 400; nothing changes.
    expectError(
      await put(a.client, [
        { category: 'webhooks', email: false, in_app: true },
        { category: 'security', email: false, in_app: true },
      ]),
      400,
      'validation_error',
    );
    for (const bad of [
      [],
      [{ category: 'marketing', email: true, in_app: true }],
      [{ category: 'webhooks', email: 'no', in_app: true }],
      [{ category: 'webhooks', email: true }],
    ]) {
      expectError(await put(a.client, bad), 400, 'validation_error');
    }
    expect(json(await get(a.client)).data).toEqual(json(defaults).data);
    // Keeping security on is accepted (it is a no-op).
    expect((await put(a.client, [{ category: 'security', email: true, in_app: true }])).statusCode).toBe(200);

    const set = await put(b.client, [{ category: 'webhooks', email: false, in_app: true }]);
    expect(set.statusCode, set.body).toBe(200);
    expect(json(set).data[1]).toEqual({ category: 'webhooks', email: false, in_app: true, locked: false });
    expect((await put(c.client, [{ category: 'webhooks', email: true, in_app: false }])).statusCode).toBe(200);
    expect((await put(d.client, [{ category: 'webhooks', email: false, in_app: false }])).statusCode).toBe(200);
    // Per person: A's are unchanged.
    expect(json(await get(a.client)).data).toEqual(json(defaults).data);

    // Security notifications so far (the members added, their keys) are sent first, whatever the preferences.
    await send();
    const securityMail = mailTo(smtp, b.email).at(-1);
    expect(securityMail?.subject).toMatch(/^(Member added|API key created)/);
    expect(unsubscribe(securityMail)).toBeUndefined();

    // An endpoint fails: "failing" for each admin, as their preferences say.
    const hook = await t.request({
      method: 'POST',
      url: '/v1/webhooks',
      key: ws.live,
      body: { url: rx.url('/p'), events: ['*'] },
    });
    expect(hook.statusCode).toBe(201);
    expect(
      (await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: 'R', type: 'standard' } }))
        .statusCode,
    ).toBe(201);
    await worker.runOnce();
    const failing = async (userId: string) =>
      (await t.services.notifications.ofUser(ws.id, userId)).filter((r) => r.type === 'endpoint.failing');
    expect((await failing(ws.adminId)).map((r) => [r.status, r.channels])).toEqual([['pending', null]]);
    expect((await failing(ids.b)).map((r) => [r.status, r.channels, r.last_error])).toEqual([
      ['skipped', 'in_app', 'email turned off'],
    ]);
    expect((await failing(ids.c)).map((r) => [r.status, r.channels])).toEqual([['pending', 'email']]);
    expect(await failing(ids.d)).toEqual([]);

    expect(await send()).toBe(2);
    const endpointMail = (email: string) =>
      mailTo(smtp, email).filter((m) => m.subject?.startsWith('Webhook endpoint failing'));
    expect(endpointMail(b.email)).toEqual([]);
    expect(endpointMail(d.email)).toEqual([]);
    expect(endpointMail(c.email)).toHaveLength(1);
    const [aMail] = endpointMail(a.email);
    expect(unsubscribe(aMail)).toBe(`<${ORIGIN}/console/w/${ws.id}/live/settings/profile#notifications>`);

    // The feed: A and B see it, C (no in-app) and D do not.
    const feedTypes = async (x: ConsoleClient) =>
      json(await x.call({ method: 'GET', url: '/console/api/notifications?limit=100', ws: ws.id })).data.map(
        (i: { type: string }) => i.type,
      );
    expect(await feedTypes(a.client)).toContain('endpoint.failing');
    expect(await feedTypes(b.client)).toContain('endpoint.failing');
    expect(await feedTypes(c.client)).not.toContain('endpoint.failing');
    expect(await feedTypes(d.client)).not.toContain('endpoint.failing');
    // Security stays in every feed.
    expect(await feedTypes(d.client)).toContain('key.created');
  });
});
