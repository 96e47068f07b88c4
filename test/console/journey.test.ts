import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiKeyPrincipal } from '../../src/kernel/principal.js';
import { systemActor } from '../../src/kernel/principal.js';
import { serviceSignature, standardSignature } from '../../src/modules/delivery-engine/signing.js';
import { keyPrincipal } from '../helpers/app.js';
import { expectAccessible, screenshot } from '../helpers/browser.js';
import { type ConsoleServer, openPage, startConsoleServer } from '../helpers/console-server.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { mailTo, type Smtp, startSmtp } from '../helpers/smtp.js';

// Backends: sqlite — the console and an email in the profile's timezone; endpoint health and notifications run on both backends in test/webhooks and test/notifications
// Tier: full — drives Chromium
// The failing-endpoint journey (docs/console.md#tests-and-screenshots): an endpoint fails until endpoint health
// disables it; the admin, whose profile is in New York (the browser runs in UTC, so a page that
// ignored the profile would show other hours), sees it in the console's feed and in an email that
// arrived over real SMTP, both in New York time; they re-enable it from the console, the receiver
// recovers and a "recovered" notification follows; then a typed test event.
// `wsvc serve --api-only` answers the console; the delivery worker and the notification job run in
// this process on an injected clock, so 120 hours pass without waiting.
const STEP = 180_000;
const HOUR = 3_600_000;
const ZONE = 'America/New_York';
const EMAIL = 'ops@journey.test';
/** 12:00 EST in New York; the disable, 120 h later, falls after the change to summer time (8 March). */
const T0 = Date.parse('2026-03-06T17:00:00.000Z');

let nowMs = Date.now();
const clock = { now: () => nowMs };
let answer = 500;
let smtp: Smtp;
let rx: Receiver;
let cs: ConsoleServer;
let ws: string;
let admin: ApiKeyPrincipal;
let hook: { id: string; secret: string };
let page: Page;

beforeAll(async () => {
  smtp = await startSmtp();
  rx = await startReceiver(() => ({ status: answer, body: answer === 200 ? 'ok' : 'down' }));
  cs = await startConsoleServer({
    apiOnly: true,
    clock,
    env: {
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      MAIL_FROM: 'Workspace Service <notify@journey.test>',
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
      WEBHOOK_MAX_RETRIES: '0',
      WEBHOOK_TIMEOUT_MS: '2000',
    },
  });
  // The workspace, the sign-in link and the session at the real time (the server's clock)…
  const journey = await cs.workspace({ name: 'Journey', adminEmail: EMAIL, adminName: 'Olu' });
  ws = journey.id;
  admin = await keyPrincipal(cs.services, journey.liveKey);
  await journey.v1('PATCH', '/users/me', { timezone: ZONE });
  page = await cs.page({ signedIn: journey.signedIn });
  // …then the endpoint, a minute before the first failure.
  nowMs = T0 - 60_000;
  hook = await cs.services.webhooks.create(cs.services.uow.as(cli()), {
    url: rx.url('/orders'),
    events: ['*'],
    label: 'Orders',
  });
}, STEP);

afterAll(async () => {
  await cs?.services.delivery.stop(1000);
  await cs?.close();
  await rx?.close();
  await smtp?.close();
});

/** The admin, as their live key: resources and the endpoint made for the journey. */
const cli = () => admin;
const path = (rest: string) => `${cs.base}/console/w/${ws}/live${rest}`;

/** `count` resources created at `atMs`, each delivery attempted once at that moment. */
async function eventsAt(atMs: number, count = 1): Promise<void> {
  nowMs = atMs;
  for (let i = 0; i < count; i++)
    await cs.services.resources.create(cs.services.uow.as(cli()), { name: `Order ${i}`, type: 'standard' });
  while ((await cs.services.delivery.runOnce()) > 0) {}
}
const sendMail = () =>
  cs.services.notifications.sendDue(cs.services.uow.as(systemActor('scheduler:send-notifications')));
const mails = (subject: string) => mailTo(smtp, EMAIL).filter((m) => m.subject?.startsWith(subject));
const feed = () => page.getByRole('list', { name: 'Notifications' }).getByRole('listitem');

/** `YYYY-MM-DD HH:MM` of an instant in New York, as the console writes it. */
function newYork(iso: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: ZONE,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(new Date(iso));
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}`;
}

describe('journey: an endpoint fails, the admin is told in their timezone, and re-enables it from the console', () => {
  it(
    'failing, then disabled after WEBHOOK_DISABLE_AFTER_H with 10 failed attempts: feed, bell, email and list in New York time',
    async () => {
      const H = cs.config.WEBHOOK_DISABLE_AFTER_H;
      // Nine failed attempts: "failing" (the first one says so), still enabled.
      await eventsAt(T0, 9);
      expect(await cs.services.webhooks.get(cli(), hook.id)).toMatchObject({
        status: 'enabled',
        failing_since: '2026-03-06T17:00:00.000Z',
      });
      // The 10th failed attempt, exactly H hours after the first: disabled.
      await eventsAt(T0 + H * HOUR);
      expect(rx.to('/orders')).toHaveLength(10);
      expect(await cs.services.webhooks.get(cli(), hook.id)).toMatchObject({
        status: 'disabled',
        disabled_reason: 'failing',
        failing_since: '2026-03-06T17:00:00.000Z',
      });

      // The mailbox: both emails over SMTP, the local time and zone named, UTC beside it.
      expect(await sendMail()).toBe(2);
      const [failing] = mails('Webhook endpoint failing: Orders');
      const [disabled] = mails('Webhook endpoint disabled: Orders');
      expect(failing?.text).toContain('since 6 Mar 2026, 12:00 GMT-5 (America/New_York) · 2026-03-06 17:00 UTC');
      expect(disabled?.text).toContain(
        'so it was disabled at 11 Mar 2026, 13:00 GMT-4 (America/New_York) · 2026-03-11 17:00 UTC',
      );
      expect(disabled?.html).toContain(`/console/w/${ws}/live/webhooks/${hook.id}`);

      // The console: the bell counts both; the feed shows them newest first, in New York time.
      await openPage(page, path('/overview'), 'Overview', 'journey-overview');
      await page.getByRole('link', { name: 'Notifications, 2 unread' }).click();
      await page.getByRole('heading', { name: 'Notifications', exact: true }).waitFor();
      await feed().first().waitFor();
      expect(await feed().count()).toBe(2);
      expect(await feed().nth(0).textContent()).toContain('Webhook endpoint disabled: Orders');
      expect(await feed().nth(1).textContent()).toContain('Webhook endpoint failing: Orders');
      const times = feed().locator('time');
      expect(await times.nth(0).textContent()).toBe('2026-03-11 13:00:00 EDT');
      expect(await times.nth(0).getAttribute('title')).toBe('2026-03-11T17:00:00.000Z');
      expect(await times.nth(1).textContent()).toBe('2026-03-06 12:00:00 EST');
      // The email said the same local times.
      expect(disabled?.text).toContain('11 Mar 2026, 13:00');
      expect(failing?.text).toContain('6 Mar 2026, 12:00');
      await expectAccessible(page, 'journey-feed');
      await screenshot(page, 'journey-feed');

      // The webhooks list: disabled, why, and failing since when.
      await openPage(page, path('/webhooks'), 'Webhooks', 'journey-webhooks');
      const row = page.getByRole('table', { name: 'Webhook endpoints' }).locator('tbody > tr').first();
      await row.getByText('disabled: failing').waitFor();
      expect(await row.textContent()).toContain('failing since 2026-03-06 12:00:00 EST');
      await screenshot(page, 'journey-webhooks-disabled');
    },
    STEP,
  );

  it(
    're-enabled from the console (confirmed), the next delivery succeeds and "recovered" reaches feed and mailbox',
    async () => {
      await page.goto(path('/webhooks'));
      await page.getByRole('link', { name: rx.url('/orders') }).click();
      await page.getByRole('heading', { name: 'Orders', exact: true }).waitFor();
      await page.getByText('failing since 2026-03-06 12:00:00 EST').waitFor();
      await page.getByRole('button', { name: 'Enable', exact: true }).click();
      const dialog = page.getByRole('dialog', { name: 'Enable this endpoint?' });
      await dialog.waitFor();
      await expectAccessible(page, 'journey-enable-dialog');
      await dialog.getByRole('button', { name: 'Enable endpoint' }).click();
      await dialog.waitFor({ state: 'detached' });
      await page.getByRole('button', { name: 'Disable', exact: true }).waitFor();
      await page.locator('.page-header .badge').getByText('enabled', { exact: true }).waitFor();
      expect(await cs.services.webhooks.get(cli(), hook.id)).toMatchObject({
        status: 'enabled',
        disabled_reason: null,
        failing_since: null,
      });

      // The receiver is fixed; the next event is delivered (now, on the real clock again).
      answer = 200;
      const before = rx.to('/orders').length;
      await eventsAt(Date.now());
      expect(rx.to('/orders')).toHaveLength(before + 1);
      expect(await sendMail()).toBe(1);
      const [recovered] = mails('Webhook endpoint recovered: Orders');
      expect(recovered?.text).toMatch(/succeeded at \d+ \w{3} \d{4}, \d\d:\d\d GMT-[45] \(America\/New_York\) · /);

      await page.goto(path('/notifications'));
      await page.getByRole('link', { name: 'Notifications, 3 unread' }).waitFor();
      await feed().first().waitFor();
      expect(await feed().nth(0).textContent()).toContain('Webhook endpoint recovered: Orders');
      const time = feed().nth(0).locator('time');
      const iso = (await time.getAttribute('title')) ?? '';
      expect(await time.textContent()).toMatch(new RegExp(`^${newYork(iso)}:\\d\\d E[SD]T$`));
      const local = newYork(iso).slice(11);
      expect(recovered?.text).toContain(`${local} GMT-`);
      expect(recovered?.text).toContain(`${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`);
    },
    STEP,
  );

  it(
    'Send test event of a chosen type: the confirmation names the delivery, the log shows it first, the receiver gets that type, signed',
    async () => {
      await openPage(page, path(`/webhooks/${hook.id}`), 'Orders', 'journey-endpoint');
      const type = page.getByLabel('Test event type');
      expect(await type.inputValue()).toBe('webhook.test');
      await type.selectOption('resource.updated');
      await page.getByRole('button', { name: 'Send test event' }).click();
      const status = page.getByRole('status').filter({ hasText: 'Test event queued as' });
      await status.waitFor();
      const dlv = (await status.locator('code').first().textContent()) ?? '';
      expect(dlv).toMatch(/^dlv_[0-9A-Z]{26}$/);
      expect(await status.textContent()).toContain('(resource.updated)');
      const first = page.getByRole('table', { name: 'Deliveries' }).locator('tbody > tr').first();
      await first.getByRole('button', { name: `Attempts of ${dlv}` }).waitFor({ timeout: 12_000 });
      expect(await first.textContent()).toContain('resource.updated');
      await expectAccessible(page, 'journey-test-event');
      await screenshot(page, 'journey-test-event');

      const before = rx.to('/orders').length;
      nowMs = Date.now();
      while ((await cs.services.delivery.runOnce()) > 0) {}
      const got = rx.to('/orders').slice(before);
      expect(got).toHaveLength(1);
      const body = JSON.parse(got[0]?.body ?? '{}');
      expect(body).toMatchObject({ event: 'resource.updated', test: true });
      expect(body.data.resource.name).toBe('Example resource');
      const h = got[0]?.headers ?? {};
      expect(h['x-service-signature']).toBe(serviceSignature(hook.secret, got[0]?.body ?? ''));
      const sig = standardSignature(
        hook.secret,
        String(h['webhook-id']),
        Number(h['webhook-timestamp']),
        got[0]?.body ?? '',
      );
      expect(h['webhook-signature']).toBe(sig);
    },
    STEP,
  );

  it(
    'dark mode: the feed, the webhooks list, the endpoint page and its Disable dialog are axe clean',
    async () => {
      const dark = await cs.browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'dark' });
      try {
        const cookies = await page.context().cookies();
        await dark.addCookies(cookies);
        const p = await dark.newPage();
        await openPage(p, path('/notifications'), 'Notifications', 'journey-feed-dark');
        await openPage(p, path('/webhooks'), 'Webhooks', 'journey-webhooks-dark');
        await openPage(p, path(`/webhooks/${hook.id}`), 'Orders', 'journey-endpoint-dark');
        await p.getByRole('button', { name: 'Disable', exact: true }).click();
        await p.getByRole('dialog', { name: 'Disable this endpoint?' }).waitFor();
        await expectAccessible(p, 'journey-disable-dialog-dark');
      } finally {
        await dark.close();
      }
    },
    STEP,
  );
});
