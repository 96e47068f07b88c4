import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/db/database.js';
import type { Services } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { expectAccessible, screenshot } from '../helpers/browser.js';
import { type ConsoleServer, loaded, startConsoleServer } from '../helpers/console-server.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';

// Backends: sqlite — the console's pages through one whole journey in Chromium; the same journey's storage rules against `wsvc serve` run on both backends over HTTP in test/console-api/deployment-journey.test.ts
// Tier: full — drives Chromium
// The console journeys in Debian's Chromium, against a real `wsvc serve` (API and delivery
// worker) on a real database (SQLite file, or PostgreSQL in the postgres project).
const PASSWORD = 'correct horse battery';
const STEP = 120_000;

let cs: ConsoleServer;
let storage: Storage & { url: string; schema?: string };
let services: Services;
let base: string;
let receiver: Receiver;
let browser: Browser;
let admin: BrowserContext;
let page: Page;
let ws: string;
let adminEmail: string;
let liveKey: string;
const failing = { on: false };

beforeAll(async () => {
  receiver = await startReceiver((r) =>
    failing.on && r.path === '/hook' ? { status: 500, body: 'receiver down' } : { status: 200, body: 'thanks' },
  );
  cs = await startConsoleServer({ env: { USAGE_FLUSH_MS: '200' } });
  ({ storage, services, base, browser } = cs);
  admin = await browser.newContext({ viewport: { width: 1360, height: 860 }, timezoneId: 'UTC' });
  page = await admin.newPage();
}, STEP);

afterAll(async () => {
  await cs?.close();
  await receiver?.close();
});

const path = (rest: string, env: 'live' | 'test' = 'live') => `${base}/console/w/${ws}/${env}${rest}`;

async function setPasswordAndSignIn(p: Page, link: string, email: string) {
  await p.goto(link);
  await p.getByLabel('New password').fill(PASSWORD);
  await p.getByLabel('Repeat the password').fill(PASSWORD);
  await p.getByRole('button', { name: 'Set password' }).click();
  // Setting the password signs the person in: straight to the overview, no second form.
  await p.getByRole('heading', { name: 'Overview' }).waitFor();
  expect(p.url()).toMatch(/\/console\/w\/ws_[0-9A-Z]+\/live\/overview$/);
  expect(await p.evaluate(async () => (await (await fetch('/console/api/session')).json()).data.email)).toBe(email);
}

/** Visits a page: waits for its heading, checks accessibility, and screenshots it. */
async function visit(p: Page, url: string, heading: string, shot: string, alsoTo?: string) {
  await p.goto(url);
  await p.getByRole('heading', { name: heading, exact: true }).waitFor();
  await loaded(p);
  await expectAccessible(p, shot);
  await screenshot(p, shot, alsoTo);
}

async function csrfOf(p: Page): Promise<string> {
  return p.evaluate(async () => {
    const r = await fetch('/console/api/session');
    return ((await r.json()) as { data: { csrf_token: string } }).data.csrf_token;
  });
}

describe('console journeys in Chromium', () => {
  it(
    'signed-out pages: sign-in, set password, forgot password are accessible',
    async () => {
      const ctx = await browser.newContext();
      const p = await ctx.newPage();
      await visit(p, `${base}/`, 'Sign in', 'sign-in');
      expect(p.url()).toBe(`${base}/console/sign-in`);
      await visit(p, `${base}/console/forgot-password`, 'Forgot your password', 'forgot-password');
      await visit(p, `${base}/console/set-password?token=x`, 'Set your password', 'set-password');
      await ctx.close();
    },
    STEP,
  );

  it(
    "admin's link → password → keys → Generate New Key → a real /v1 call → revoke → 401 expired_token",
    async () => {
      adminEmail = 'admin@acme.test';
      const out = await services.workspaces.create(asCli(services), {
        name: 'Acme',
        adminEmail,
        adminName: 'Ada Admin',
      });
      ws = out.workspace.id;
      liveKey = out.keys.live.key;
      await setPasswordAndSignIn(page, out.set_password_url, adminEmail);
      await visit(page, path('/overview'), 'Overview', 'overview');
      await page.getByRole('link', { name: 'API Keys' }).click();
      await page.getByRole('heading', { name: 'API Keys' }).waitFor();
      await page.getByRole('button', { name: 'Generate New Key' }).click();
      await page.getByLabel('Name').fill('Deploy bot');
      await page.getByLabel('Environment').selectOption('live');
      await page.getByRole('checkbox', { name: 'webhooks:write' }).uncheck();
      await page.getByRole('button', { name: 'Generate key' }).click();
      const shown = page.getByLabel('API key', { exact: true });
      const key = await shown.inputValue();
      expect(key).toMatch(/^svc_live_[0-9A-Za-z]{32,}$/);
      await expect.poll(() => page.getByText(`Bearer ${key}`).count()).toBe(1);
      await screenshot(page, 'keys-generated');
      await page.getByRole('button', { name: 'Done' }).click();
      // Shown once: the page now has only the prefix.
      expect(await page.getByText(key).count()).toBe(0);
      const ok = await fetch(`${base}/v1/resources`, { headers: { authorization: `Bearer ${key}` } });
      expect(ok.status).toBe(200);
      // Roll with no overlap: the successor works, the old key stops at once.
      await visit(page, path('/settings/keys'), 'API Keys', 'keys');
      await page.getByRole('button', { name: 'Roll Deploy bot' }).click();
      await page.getByLabel('Keep the old key working for').selectOption('0');
      await page.getByRole('button', { name: 'Roll key' }).click();
      const rolled = await page.getByLabel('New API key', { exact: true }).inputValue();
      expect(rolled).toMatch(/^svc_live_/);
      expect(rolled).not.toBe(key);
      await page.getByRole('button', { name: 'Done' }).click();
      const oldKey = await fetch(`${base}/v1/resources`, { headers: { authorization: `Bearer ${key}` } });
      expect(oldKey.status).toBe(401);
      const newKey = await fetch(`${base}/v1/resources`, { headers: { authorization: `Bearer ${rolled}` } });
      expect(newKey.status).toBe(200);
      await page.getByRole('button', { name: 'Revoke Deploy bot' }).waitFor();
      await screenshot(page, 'keys-rolled');
      await page.getByRole('button', { name: 'Revoke Deploy bot' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
      await expect.poll(() => page.getByRole('button', { name: 'Revoke Deploy bot' }).count()).toBe(0);
      const after = await fetch(`${base}/v1/resources`, { headers: { authorization: `Bearer ${rolled}` } });
      expect(after.status).toBe(401);
      expect(((await after.json()) as { error: { code: string } }).error.code).toBe('expired_token');
    },
    STEP,
  );

  it(
    'webhook to a loopback receiver → secret once → resource from the console → delivery log → retry a failure',
    async () => {
      await visit(page, path('/webhooks'), 'Webhooks', 'webhooks-empty');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByLabel('Endpoint URL').fill(receiver.url('/hook'));
      await page.getByLabel('Label').fill('Billing sync');
      await page.getByRole('button', { name: 'Add endpoint' }).last().click();
      const secret = await page.getByLabel('Signing secret', { exact: true }).inputValue();
      expect(secret).toMatch(/^whsec_/);
      await page.getByRole('button', { name: 'Done' }).click();
      expect(await page.getByText(secret).count()).toBe(0);
      await visit(page, path('/webhooks'), 'Webhooks', 'webhooks');

      await visit(page, path('/resources'), 'Resources', 'resources-empty');
      await page.getByRole('button', { name: 'New resource' }).click();
      await page.getByLabel('Name').fill('Invoice 1');
      await page.getByLabel('Metadata').fill('plan=pro\nregion=eu');
      await page.getByRole('button', { name: 'Create resource' }).click();
      // Confirmed, and first in the list (newest first).
      await page.getByRole('status').filter({ hasText: 'Created Invoice 1' }).waitFor();
      await page.getByRole('table', { name: 'Resources' }).getByRole('link', { name: 'Invoice 1' }).waitFor();
      await receiver.until((r) => r.some((x) => x.path === '/hook'));
      await visit(page, path('/resources'), 'Resources', 'resources');

      failing.on = true;
      await page.getByRole('button', { name: 'New resource' }).click();
      await page.getByLabel('Name').fill('Invoice 2');
      await page.getByRole('button', { name: 'Create resource' }).click();
      await page.getByRole('table', { name: 'Resources' }).getByRole('link', { name: 'Invoice 2' }).waitFor();
      const webhookId = (await v1('/webhooks'))[0]?.id as string;
      await eventually(async () => {
        const d = await v1(`/webhooks/${webhookId}/deliveries`);
        return d.some((x) => x.status === 'failed');
      }, 20_000);
      failing.on = false;

      // The overview: the success rate, the chart (uPlot's canvas, its time axis in the profile's zone), and the
      // recent failure, which links to that delivery's attempts.
      await visit(page, path('/overview'), 'Overview', 'overview-deliveries');
      await page.getByText('50.0 %').waitFor();
      const chart = page.getByRole('img', { name: /^Deliveries per hour since .*: 1 succeeded, 1 failed/ });
      await chart.locator('canvas').first().waitFor();
      // The deliveries chart's own caption (the requests chart beside it has one too).
      await page.locator('figure').filter({ has: chart }).getByText('Times in UTC').waitFor();
      await page.getByText('The numbers, per hour').click();
      await expect
        .poll(() => page.getByRole('table', { name: 'Deliveries per hour' }).getByRole('row').count())
        .toBe(2);
      await screenshot(page, 'overview-chart');
      await page.getByRole('link', { name: /^Delivery dlv_/ }).click();
      const focused = page.locator('section.focused');
      await focused.getByText(/Attempt 1 at .* ms · HTTP 500/).waitFor();
      expect(page.url()).toContain(`/webhooks/${webhookId}?delivery=dlv_`);

      await page.goto(path(`/webhooks/${webhookId}`));
      await page.getByRole('heading', { name: 'Delivery log' }).waitFor();
      await page.getByRole('cell', { name: 'failed' }).waitFor();
      await expectAccessible(page, 'delivery-log');
      await screenshot(page, 'delivery-log');
      const failedRow = page.getByRole('row').filter({ has: page.getByText('failed', { exact: true }) });
      await failedRow.getByRole('button', { name: /Attempts of/ }).click();
      await page.getByText(/Attempt 1 at .* ms · HTTP 500/).waitFor();
      await page.getByText('receiver down').waitFor();
      // Each attempt's request headers with their values, as sent.
      const sent = page.getByRole('table', { name: 'Request headers of attempt 1' });
      const header = (name: string) =>
        sent
          .getByRole('row')
          .filter({ has: page.getByRole('rowheader', { name, exact: true }) })
          .getByRole('cell');
      expect(await header('webhook-id').textContent()).toMatch(/^evt_[0-9A-Z]{26}$/);
      expect(await header('webhook-signature').textContent()).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
      expect(await header('webhook-timestamp').textContent()).toMatch(/^\d{10}$/);
      expect(await header('content-type').textContent()).toBe('application/json');
      await screenshot(page, 'delivery-attempts');
      await page.getByRole('button', { name: 'Retry delivery' }).click();
      await eventually(async () => {
        const d = await v1(`/webhooks/${webhookId}/deliveries`);
        return d.length === 2 && d.every((x) => x.status === 'succeeded');
      }, 20_000);
      await page.reload();
      await page.getByRole('heading', { name: 'Delivery log' }).waitFor();
      await expect.poll(() => page.getByRole('cell', { name: 'succeeded' }).count()).toBe(2);
      await expect.poll(() => page.getByRole('cell', { name: 'failed', exact: true }).count()).toBe(0);
      // Send a test event; rotate the secret (the new one shown once).
      await page.getByRole('button', { name: 'Send test event' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: /^Test event queued as dlv_/ })
        .waitFor();
      await receiver.until((r) => r.some((x) => x.path === '/hook' && x.body.includes('webhook.test')));
      await page.getByRole('button', { name: 'Rotate secret' }).click();
      await page.getByRole('button', { name: 'Rotate', exact: true }).click();
      const rotated = await page.getByLabel('New signing secret', { exact: true }).inputValue();
      expect(rotated).toMatch(/^whsec_/);
      expect(rotated).not.toBe(secret);
      await page.getByRole('button', { name: 'Done' }).click();
      // Status filter in the URL.
      await page.getByLabel('Status').selectOption('failed');
      await page.getByText('No deliveries match these filters.').waitFor();
      expect(page.url()).toContain('status=failed');
    },
    STEP,
  );

  it(
    'profile timezone Asia/Tokyo → the delivery log shows JST, matching the UTC value on hover',
    async () => {
      await visit(page, path('/settings/profile'), 'Profile', 'profile');
      await page.getByLabel('Search timezones').fill('Tokyo');
      await page.getByLabel('Timezone', { exact: true }).selectOption('Asia/Tokyo');
      await page.getByRole('button', { name: 'Save profile' }).click();
      await page.getByText('Saved.').waitFor();
      const webhookId = (await v1('/webhooks'))[0]?.id as string;
      await page.goto(path(`/webhooks/${webhookId}`));
      await page.getByRole('heading', { name: 'Delivery log' }).waitFor();
      const cell = page.getByRole('table', { name: 'Deliveries' }).locator('time').first();
      await cell.waitFor();
      const shown = (await cell.textContent()) ?? '';
      const utc = (await cell.getAttribute('title')) ?? '';
      expect(shown).toMatch(/ JST$/);
      expect(utc).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const tokyo = new Date(Date.parse(utc) + 9 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
      expect(shown).toBe(`${tokyo} JST`);
      await cell.hover();
      await screenshot(page, 'delivery-log-jst');
      // The overview's chart axis follows the profile's zone too.
      await page.goto(path('/overview'));
      const deliveriesChart = page.getByRole('img', { name: /^Deliveries per hour/ });
      await deliveriesChart.locator('canvas').first().waitFor();
      await page.locator('figure').filter({ has: deliveriesChart }).getByText('Times in JST').waitFor();
    },
    STEP,
  );

  it(
    'the live/test switch shows two separate worlds',
    async () => {
      await page.goto(path('/resources'));
      await page.getByRole('link', { name: 'Invoice 1' }).waitFor();
      await page.getByRole('link', { name: 'Test', exact: true }).click();
      await page.getByText('No resources yet.').waitFor();
      expect(page.url()).toBe(path('/resources', 'test'));
      await page.getByRole('button', { name: 'New resource' }).click();
      await page.getByLabel('Name').fill('Sandbox thing');
      await page.getByRole('button', { name: 'Create resource' }).click();
      await page.getByRole('table', { name: 'Resources' }).getByRole('link', { name: 'Sandbox thing' }).waitFor();
      expect(await page.getByRole('link', { name: 'Invoice 1' }).count()).toBe(0);
      await expectAccessible(page, 'resources-test');
      await screenshot(page, 'resources-test');
      await page.getByRole('link', { name: 'Live', exact: true }).click();
      await page.getByRole('link', { name: 'Invoice 1' }).waitFor();
      expect(await page.getByRole('link', { name: 'Sandbox thing' }).count()).toBe(0);
    },
    STEP,
  );

  it(
    'resource detail, events, members and billing pages render and are accessible',
    async () => {
      await page.goto(path('/resources'));
      await page.getByRole('link', { name: 'Invoice 1' }).click();
      await page.getByRole('heading', { name: 'Event history' }).waitFor();
      await page.getByText('resource.created').first().waitFor();
      await page.getByText('region').waitFor();
      await expectAccessible(page, 'resource-detail');
      await screenshot(page, 'resource-detail');
      await visit(page, path('/events'), 'Events', 'events');
      await visit(page, path('/settings/members'), 'Members', 'members');
      await visit(page, path('/settings/billing'), 'Billing', 'billing');
    },
    STEP,
  );

  it(
    "traffic → the overview's requests chart and the Usage page show it in the profile's zone → a failed call's request id finds its log entry",
    async () => {
      for (let i = 0; i < 3; i++) {
        const ok = await fetch(`${base}/v1/resources`, { headers: { authorization: `Bearer ${liveKey}` } });
        expect(ok.status).toBe(200);
      }
      const failed = await fetch(`${base}/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R`, {
        headers: { authorization: `Bearer ${liveKey}` },
      });
      expect(failed.status).toBe(404);
      const requestId = failed.headers.get('x-request-id') as string;
      // Written by the server's meter within USAGE_FLUSH_MS (200 ms here).
      await eventually(async () => {
        const rows = await storage.db.selectFrom('request_log').select('request_id').execute();
        return rows.some((r) => r.request_id === requestId);
      }, 10_000);

      await visit(page, path('/overview'), 'Overview', 'overview-requests');
      await page
        .getByRole('img', { name: /^API requests and errors per hour/ })
        .locator('canvas')
        .first()
        .waitFor();
      await page.getByText('Times in JST').first().waitFor();

      await visit(page, path('/usage'), 'Usage', 'usage');
      await page
        .getByRole('img', { name: /^Requests per hour by route/ })
        .locator('canvas')
        .first()
        .waitFor();
      await page.getByText('Times in JST').waitFor();
      const byRoute = page.getByRole('table', { name: 'Requests by route' });
      await byRoute.getByRole('row').filter({ hasText: 'GET /v1/resources/:id' }).waitFor();
      await screenshot(page, 'usage-chart');

      await page.getByRole('link', { name: 'Find a failed request' }).click();
      await page.getByRole('heading', { name: 'Failed requests' }).waitFor();
      await page.getByLabel('Request id').fill(requestId);
      await page.getByRole('button', { name: 'Find' }).click();
      const rows = page.getByRole('table', { name: 'Failed requests, newest first' }).getByRole('row');
      await expect.poll(() => rows.count()).toBe(2);
      await rows.nth(1).getByText('not_found').waitFor();
      await rows.nth(1).getByText(requestId).waitFor();
      await expectAccessible(page, 'failed-requests');
      await screenshot(page, 'failed-requests');
    },
    STEP,
  );

  it(
    'invite a viewer → they set a password → no admin controls → the server answers 403 when forced',
    async () => {
      await page.goto(path('/settings/members'));
      await page.getByRole('button', { name: 'Invite member' }).click();
      const viewerEmail = 'viewer@acme.test';
      await page.getByLabel('Email').fill(viewerEmail);
      await page.getByLabel('Role').selectOption('viewer');
      await page.getByRole('button', { name: 'Invite', exact: true }).click();
      const link = await page.getByLabel('Invite link', { exact: true }).inputValue();
      expect(link).toMatch(new RegExp(`^${base}/console/set-password\\?token=`));
      await page.getByRole('button', { name: 'Done' }).click();
      await page.getByText(`${viewerEmail} as viewer`).waitFor();

      const viewerCtx = await browser.newContext({ viewport: { width: 1360, height: 860 } });
      const viewer = await viewerCtx.newPage();
      await setPasswordAndSignIn(viewer, link, viewerEmail);
      expect(await viewer.getByRole('link', { name: 'Webhooks' }).count()).toBe(0);
      await visit(viewer, path('/resources'), 'Resources', 'viewer-resources');
      await viewer.getByRole('link', { name: 'Invoice 1' }).waitFor();
      expect(await viewer.getByRole('button', { name: 'New resource' }).count()).toBe(0);
      await viewer.getByRole('link', { name: 'Invoice 1' }).click();
      await viewer.getByRole('heading', { name: 'Event history' }).waitFor();
      expect(await viewer.getByRole('button', { name: 'Delete' }).count()).toBe(0);
      expect(await viewer.getByRole('button', { name: 'Archive' }).count()).toBe(0);
      await visit(viewer, path('/settings/members'), 'Members', 'viewer-members');
      // Usage is not theirs to see: a friendly note, not an error.
      await visit(viewer, path('/usage'), 'Usage', 'viewer-usage');
      await viewer.getByText(/Usage is shown to admins and members/).waitFor();
      expect(await viewer.getByRole('alert').count()).toBe(0);
      expect(await viewer.getByRole('button', { name: 'Invite member' }).count()).toBe(0);
      expect(await viewer.getByRole('button', { name: /^Remove / }).count()).toBe(0);
      // Forced: the same calls the hidden controls would make, with a valid session and CSRF token.
      const csrf = await csrfOf(viewer);
      const forced = await viewer.evaluate(
        async ({ ws, csrf }) => {
          const call = (url: string, body: unknown) =>
            fetch(url, {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                'x-csrf-token': csrf,
                'x-workspace-id': ws,
                'x-env': 'live',
              },
              body: JSON.stringify(body),
            }).then(async (r) => ({
              status: r.status,
              code: ((await r.json()) as { error: { code: string } }).error.code,
            }));
          return [
            await call('/console/api/v1/resources', { name: 'nope', type: 'standard' }),
            await call('/console/api/members', { email: 'x@acme.test', role: 'admin' }),
            await call('/console/api/v1/webhooks', { url: 'http://127.0.0.1:9/x', events: ['*'] }),
          ];
        },
        { ws, csrf },
      );
      expect(forced).toEqual([
        { status: 403, code: 'insufficient_scope' },
        { status: 403, code: 'insufficient_scope' },
        { status: 403, code: 'insufficient_scope' },
      ]);
      await viewerCtx.close();
    },
    STEP,
  );

  it(
    'a cross-origin POST carrying the session cookie is refused; a wrong method is a 405; sign-out ends the session',
    async () => {
      // Console routes answer a method they lack as /v1 does: 405, Allow, the error body.
      const wrong = await page.evaluate(async () => {
        const r = await fetch('/console/api/session', { method: 'PUT' });
        return { status: r.status, allow: r.headers.get('allow'), body: await r.json() };
      });
      expect(wrong).toMatchObject({
        status: 405,
        allow: 'DELETE, GET, HEAD, POST',
        body: { error: { code: 'method_not_allowed' } },
      });
      const csrf = await csrfOf(page);
      const cookies = await admin.cookies(base);
      const session = cookies.find((c) => c.name === 'wsvc_session');
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax' });
      const before = (await v1('/resources')).length;
      // A page of another origin (the receiver's port) posts to the console with the browser's cookie.
      await page.goto(receiver.url('/evil'));
      await page.evaluate(async (url) => {
        await fetch(url, {
          method: 'POST',
          mode: 'no-cors',
          credentials: 'include',
          headers: { 'content-type': 'text/plain' },
          body: JSON.stringify({ name: 'forged', type: 'standard' }),
        }).catch(() => undefined);
      }, `${base}/console/api/v1/resources`);
      // The same request, with the session's own CSRF token but a foreign Origin, read back directly.
      const forged = await admin.request.post(`${base}/console/api/v1/resources`, {
        headers: { origin: 'http://evil.example', 'x-csrf-token': csrf, 'x-workspace-id': ws },
        data: { name: 'forged', type: 'standard' },
      });
      expect(forged.status()).toBe(403);
      expect(((await forged.json()) as { error: { code: string } }).error.code).toBe('csrf_failed');
      expect((await v1('/resources')).length).toBe(before);

      await page.goto(path('/overview'));
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
      // An ended session: reads and writes alike answer 401 unauthenticated.
      const reuse = await fetch(`${base}/console/api/session`, {
        headers: { cookie: `wsvc_session=${session?.value}` },
      });
      expect(reuse.status).toBe(401);
      expect(((await reuse.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
      const write = await fetch(`${base}/console/api/v1/resources`, {
        method: 'POST',
        headers: {
          cookie: `wsvc_session=${session?.value}`,
          origin: base,
          'x-csrf-token': csrf,
          'x-workspace-id': ws,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ name: 'after sign-out', type: 'standard' }),
      });
      expect(write.status).toBe(401);
      expect(((await write.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
      await page.goto(path('/settings/keys'));
      await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    },
    STEP,
  );
});

/** A GET through /v1 with the workspace's live key (what the console shows must match it). */
async function v1(url: string): Promise<{ id: string; status: string }[]> {
  const res = await fetch(`${base}/v1${url}`, { headers: { authorization: `Bearer ${liveKey}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { id: string; status: string }[] }).data;
}
