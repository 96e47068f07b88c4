import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli } from '../helpers/app.js';
import { expectAccessible, screenshot } from '../helpers/browser.js';
import { PASSWORD } from '../helpers/console.js';
import { type ConsoleServer, type ConsoleWorkspace, openPage, startConsoleServer } from '../helpers/console-server.js';

// Backends: sqlite — the console bundle's forms in Chromium; the API behind them runs on both backends in test/
// Tier: full — drives Chromium
// The console's forms and safety steps: checkboxes that stay checkboxes, `*` exclusive,
// a field's error shown once and attached to it, confirmations before disabling an endpoint and
// changing a role, a key's expiry, revoked keys hidden, dates on one line. A set-password link that was
// used, has expired or never existed says so and where to get a new one, without the form it cannot submit.
const STEP = 120_000;

let cs: ConsoleServer;
let acme: ConsoleWorkspace;
let ws: string;
let page: Page;

const path = (rest: string) => acme.path(rest);

beforeAll(async () => {
  cs = await startConsoleServer();
  acme = await cs.workspace({ name: 'Acme', adminEmail: 'admin@acme.test', adminName: 'Ada' });
  ws = acme.id;
  page = await cs.page({ signedIn: acme.signedIn });
}, STEP);

afterAll(async () => {
  await cs?.close();
});

describe('console forms', () => {
  it(
    'the events picker: checkboxes keep their size, "All events (*)" excludes single events, a bad URL errs once on its field',
    async () => {
      await openPage(page, path('/webhooks'), 'Webhooks', 'forms-webhooks');
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      const dialog = page.getByRole('dialog');
      const all = dialog.getByRole('checkbox', { name: 'All events (*)' });
      const created = dialog.getByRole('checkbox', { name: 'resource.created' });
      const deleted = dialog.getByRole('checkbox', { name: 'resource.deleted' });
      // A checkbox is a box beside its label, not a 100 %-wide input.
      const box = await created.boundingBox();
      expect(box?.width ?? 999).toBeLessThan(30);
      expect(await all.isChecked()).toBe(true);
      await created.check();
      expect(await all.isChecked()).toBe(false);
      await deleted.check();
      expect([await created.isChecked(), await deleted.isChecked()]).toEqual([true, true]);
      await all.check();
      expect([await all.isChecked(), await created.isChecked(), await deleted.isChecked()]).toEqual([
        true,
        false,
        false,
      ]);
      await created.check();
      await deleted.check();
      // A URL the server refuses: its message once, under the field, describing it.
      const url = dialog.getByLabel('Endpoint URL');
      await url.fill('http://user:secret@127.0.0.1:9/hook');
      await dialog.getByRole('button', { name: 'Add endpoint' }).click();
      const message = 'url must not contain a user name or password';
      await dialog.getByText(message).waitFor();
      expect(await page.getByText(message).count()).toBe(1);
      const describedBy = (await url.getAttribute('aria-describedby')) ?? '';
      expect(await page.locator(`[id="${describedBy.split(' ')[0]}"]`).textContent()).toBe(message);
      expect(await url.getAttribute('aria-invalid')).toBe('true');
      await expectAccessible(page, 'forms-url-error');
      await screenshot(page, 'forms-url-error');
      await url.fill('http://127.0.0.1:9/hook');
      await dialog.getByRole('button', { name: 'Add endpoint' }).click();
      await dialog.getByLabel('Signing secret', { exact: true }).waitFor();
      await dialog.getByRole('button', { name: 'Done' }).click();
      const hooks = await acme.v1<{ id: string; events: string[] }[]>('GET', '/webhooks');
      expect(hooks.data[0]?.events.sort()).toEqual(['resource.created', 'resource.deleted']);
    },
    STEP,
  );

  it(
    'disabling an endpoint asks first; Cancel leaves it enabled',
    async () => {
      const [hook] = (await acme.v1<{ id: string; status: string }[]>('GET', '/webhooks')).data;
      await openPage(page, path(`/webhooks/${hook?.id}`), 'Webhook endpoint', 'forms-webhook');
      await page.getByRole('button', { name: 'Disable', exact: true }).click();
      const dialog = page.getByRole('dialog', { name: 'Disable this endpoint?' });
      await dialog.waitFor();
      await expectAccessible(page, 'forms-disable-confirm');
      await screenshot(page, 'forms-disable-confirm');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect((await acme.v1<{ status: string }>('GET', `/webhooks/${hook?.id}`)).data.status).toBe('enabled');
      await page.getByRole('button', { name: 'Disable', exact: true }).click();
      await dialog.getByRole('button', { name: 'Disable endpoint' }).click();
      await page.getByRole('button', { name: 'Enable', exact: true }).waitFor();
      expect((await acme.v1<{ status: string }>('GET', `/webhooks/${hook?.id}`)).data.status).toBe('disabled');
    },
    STEP,
  );

  it(
    "changing a member's role asks first; Cancel keeps the role",
    async () => {
      const invite = await cs.services.members.invite(asCli(cs.services), ws, {
        email: 'mo@acme.test',
        role: 'member',
      });
      // The invite's set-password page names the account it is for.
      const linkPage = await cs.page();
      await openPage(linkPage, invite.invite_url, 'Set your password', 'forms-set-password');
      await linkPage.getByText('For mo@acme.test.').waitFor();
      await screenshot(linkPage, 'forms-set-password');
      await openPage(page, path('/settings/members'), 'Members', 'forms-members');
      const role = page.getByLabel('Role of mo@acme.test');
      await role.selectOption('viewer');
      const dialog = page.getByRole('dialog', { name: "Change this member's role?" });
      await dialog.getByText(/mo@acme.test becomes a viewer/).waitFor();
      await expectAccessible(page, 'forms-role-confirm');
      await screenshot(page, 'forms-role-confirm');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect(await role.inputValue()).toBe('member');
      const roleOf = async () =>
        (await acme.v1<{ email: string; role: string }[]>('GET', '/users')).data.find((u) => u.email === 'mo@acme.test')
          ?.role;
      expect(await roleOf()).toBe('member');
      await role.selectOption('viewer');
      await dialog.getByRole('button', { name: 'Change role' }).click();
      await expect.poll(roleOf).toBe('viewer');
      await expect.poll(() => role.inputValue()).toBe('viewer');
    },
    STEP,
  );

  it(
    'a key with an expiry date; revoked keys hidden unless asked; dates on one line at 1280 px',
    async () => {
      await openPage(page, path('/settings/keys'), 'API Keys', 'forms-keys');
      await page.getByRole('button', { name: 'Generate New Key' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel('Name').fill('Short-lived');
      const day = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
      await dialog.getByLabel('Expires on (optional)').fill(day);
      await dialog.getByRole('button', { name: 'Generate key' }).click();
      await dialog.getByLabel('API key', { exact: true }).waitFor();
      await dialog.getByRole('button', { name: 'Done' }).click();
      const keys = (await acme.v1<{ id: string; name: string; expires_at: string | null }[]>('GET', '/keys')).data;
      expect(keys.find((k) => k.name === 'Short-lived')?.expires_at).toBe(`${day}T00:00:00.000Z`);
      await page.getByRole('row').filter({ hasText: 'Short-lived' }).getByText('expires').waitFor();
      // Dates stay on one line: a <time> in the table is one line high.
      const heights = await page
        .getByRole('table', { name: 'API keys' })
        .locator('time')
        .evaluateAll((els) => els.map((e) => e.getBoundingClientRect().height));
      const line = await page.locator('body').evaluate((b) => Number.parseFloat(getComputedStyle(b).lineHeight) || 20);
      expect(heights.length).toBeGreaterThan(0);
      for (const h of heights) expect(h).toBeLessThan(line * 1.6);
      // Revoke it: hidden by default, shown with the toggle (kept in the URL).
      await page.getByRole('button', { name: 'Revoke Short-lived' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Revoke key' }).click();
      await page.getByText('1 revoked key hidden').waitFor();
      expect(await page.getByRole('row').filter({ hasText: 'Short-lived' }).count()).toBe(0);
      // The box follows the URL (?revoked=show), which React Router updates in a transition: it can
      // turn checked a moment after the click, which Playwright's check() counts as a failure.
      // The revocation's refetches settle first, so the click lands on the box that stays.
      await page.waitForLoadState('networkidle');
      const showRevoked = page.getByRole('checkbox', { name: 'Show revoked keys' });
      await showRevoked.click();
      await expect.poll(() => showRevoked.isChecked(), { timeout: 5000 }).toBe(true);
      await page.getByRole('row').filter({ hasText: 'Short-lived' }).getByText('revoked').waitFor();
      expect(page.url()).toContain('revoked=show');
      await expectAccessible(page, 'forms-keys-revoked');
      await screenshot(page, 'forms-keys-revoked');
    },
    STEP,
  );

  it(
    'a rolled key and its successor share a name; the successor says which key it was rolled from',
    async () => {
      const made = (
        await acme.v1<{ id: string; prefix: string }>('POST', '/keys', { name: 'Nightly export', env: 'live' })
      ).data;
      const next = (await acme.v1<{ id: string; rolled_from: string }>('POST', `/keys/${made.id}/roll`, {})).data;
      expect(next.rolled_from).toBe(made.id);
      await openPage(page, path('/settings/keys'), 'API Keys', 'forms-keys-rolled');
      const rows = page.getByRole('row').filter({ hasText: 'Nightly export' });
      await expect.poll(() => rows.count(), { timeout: 5000 }).toBe(2);
      const successor = rows.filter({ hasText: 'rolled from' });
      expect(await successor.count()).toBe(1);
      expect(await successor.getByText('rolled from').textContent()).toContain(`svc_live_${made.prefix}…`);
      await expectAccessible(page, 'forms-keys-rolled');
      await screenshot(page, 'forms-keys-rolled');
    },
    STEP,
  );

  it(
    'a used or unknown set-password link: the message and the ways to a new link, no password form',
    async () => {
      const invite = await cs.services.members.invite(asCli(cs.services), ws, {
        email: 'used@acme.test',
        role: 'viewer',
      });
      const p = await cs.page();
      await openPage(p, invite.invite_url, 'Set your password', 'forms-set-password-live');
      await p.getByLabel('New password').fill(PASSWORD);
      await p.getByLabel('Repeat the password').fill(PASSWORD);
      await p.getByRole('button', { name: 'Set password' }).click();
      await p.getByRole('heading', { name: 'Overview' }).waitFor();
      // The same link again (used), then a link that never existed: the server answers both 400 invalid_link,
      // as it does for an expired one.
      const unknown = `${cs.base}/console/set-password?token=${'A'.repeat(43)}`;
      for (const [url, name] of [
        [invite.invite_url, 'used'],
        [unknown, 'unknown'],
      ] as const) {
        const dead = await cs.page();
        await openPage(dead, url, 'Set your password', `forms-set-password-${name}`);
        await dead.getByRole('alert').filter({ hasText: 'This link has been used or has expired.' }).waitFor();
        expect(await dead.getByLabel('New password').count()).toBe(0);
        expect(await dead.getByLabel('Repeat the password').count()).toBe(0);
        expect(await dead.getByRole('button', { name: 'Set password' }).count()).toBe(0);
        await dead.getByRole('link', { name: 'ask for one by email' }).click();
        await dead.getByRole('heading', { name: 'Forgot your password' }).waitFor();
        await dead.goBack();
        await dead.getByRole('link', { name: 'Sign in' }).click();
        await dead.getByRole('heading', { name: 'Sign in' }).waitFor();
        if (name === 'used') {
          await dead.goBack();
          await dead.getByRole('alert').filter({ hasText: 'has expired' }).waitFor();
          await screenshot(dead, 'forms-set-password-used');
        }
        await dead.context().close();
      }
      await p.context().close();
    },
    STEP,
  );
});
