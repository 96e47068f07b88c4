import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli } from '../helpers/app.js';
import { expectAccessible, screenshot } from '../helpers/browser.js';
import {
  type ConsoleServer,
  type ConsoleWorkspace,
  expectNoHorizontalOverflow,
  openPage,
  signedInState,
  startConsoleServer,
} from '../helpers/console-server.js';

// Backends: sqlite — phone layout, dark mode and role-aware pages of the console bundle
// Tier: full — drives Chromium
// The console on a phone (390×844) and in dark mode, and the viewer's landing page
// (responsive layout, dark mode, role-aware pages), in Debian's Chromium against a real `wsvc serve`.
const STEP = 120_000;
const PHONE = { width: 390, height: 844 };

let cs: ConsoleServer;
let acme: ConsoleWorkspace;
let ws: string;
let viewerLink: string;

beforeAll(async () => {
  cs = await startConsoleServer();
  acme = await cs.workspace({ name: 'Acme', adminEmail: 'admin@acme.test', adminName: 'Ada' });
  ws = acme.id;
  await acme.v1('POST', '/resources', { name: 'Invoice with a rather long name 1', type: 'standard' });
  await acme.v1('POST', '/webhooks', {
    url: 'http://127.0.0.1:9/a-long-path/hook',
    events: ['*'],
    label: 'Billing sync',
  });
  await acme.v1('POST', '/keys', { name: 'Deploy bot', env: 'live' });
  viewerLink = (await cs.services.members.invite(asCli(cs.services), ws, { email: 'viewer@acme.test', role: 'viewer' }))
    .invite_url;
}, STEP);

afterAll(async () => {
  await cs?.close();
});

const path = (rest: string) => acme.path(rest);

describe('the console on a phone and in dark mode', () => {
  let page: Page;

  beforeAll(async () => {
    page = await cs.page({ viewport: PHONE, colorScheme: 'light', signedIn: acme.signedIn });
  }, STEP);

  it(
    'on a phone the navigation is behind Menu; a wide table scrolls inside its frame',
    async () => {
      // Every page at 390×844 (no sideways scrolling, Sign out on screen, axe, a screenshot) is in
      // test/console/screens-*.test.ts, light and dark.
      await openPage(page, path('/overview'), 'Overview', 'phone-overview');
      // The navigation is collapsed; Menu opens it, and following a link closes it again.
      const menu = page.getByRole('button', { name: 'Menu' });
      expect(await menu.getAttribute('aria-expanded')).toBe('false');
      expect(await page.getByRole('link', { name: 'Events' }).isVisible()).toBe(false);
      await menu.click();
      expect(await menu.getAttribute('aria-expanded')).toBe('true');
      await expectAccessible(page, 'phone-menu-open');
      await screenshot(page, 'phone-menu-open');
      await page.getByRole('link', { name: 'Events' }).click();
      await page.getByRole('heading', { name: 'Events', exact: true }).waitFor();
      await expect.poll(() => menu.getAttribute('aria-expanded')).toBe('false');
      // A wide table scrolls inside its frame, not the page.
      await openPage(page, path('/settings/keys'), 'API Keys', 'phone-keys');
      const wrap = await page
        .locator('.table-wrap')
        .first()
        .evaluate((el) => ({ sw: el.scrollWidth, cw: el.clientWidth }));
      expect(wrap.sw).toBeGreaterThan(wrap.cw);
      await expectNoHorizontalOverflow(page, 'keys');
    },
    STEP,
  );

  it(
    "dark mode follows the system's preference, is axe clean, and the Theme choice is remembered",
    async () => {
      // The admin's session in a new context (its own localStorage, so the Theme choice starts unset).
      // Every page in dark at 1280 and 390 px (axe, its background, a screenshot) is in
      // test/console/screens-*.test.ts; here the system's preference, a dialog and the Theme choice.
      const p = await cs.page({ colorScheme: 'dark', signedIn: acme.signedIn });
      const background = () => p.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      await openPage(p, path('/webhooks'), 'Webhooks', 'dark-webhooks');
      expect(await background()).toBe('rgb(13, 17, 23)');
      // Dialogs too.
      await p.getByRole('button', { name: 'Add endpoint' }).click();
      await expectAccessible(p, 'dark-add-endpoint');
      await screenshot(p, 'dark-add-endpoint');
      await p.getByRole('button', { name: 'Cancel' }).click();
      // Light chosen by hand wins over the system's dark, across reloads (localStorage).
      await p.getByLabel('Theme').selectOption('light');
      expect(await background()).toBe('rgb(246, 247, 249)');
      await p.reload();
      await p.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
      expect(await background()).toBe('rgb(246, 247, 249)');
      expect(await p.getByLabel('Theme').inputValue()).toBe('light');
      await expectAccessible(p, 'light-chosen');
      // And dark chosen by hand wins over a light system.
      const lp = await cs.page({ colorScheme: 'light' });
      await lp.goto(`${cs.base}/console/sign-in`);
      await lp.evaluate(() => localStorage.setItem('wsvc-theme', 'dark'));
      await lp.reload();
      await lp.getByRole('heading', { name: 'Sign in' }).waitFor();
      expect(await lp.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).toBe(
        'rgb(13, 17, 23)',
      );
      await expectAccessible(lp, 'dark-sign-in');
    },
    STEP,
  );
});

describe("a viewer's landing", () => {
  it(
    'the overview shows no error boxes: delivery sections are replaced by a note',
    async () => {
      const p = await cs.page({ signedIn: await signedInState(cs.base, viewerLink) });
      await openPage(p, path('/overview'), 'Overview', 'viewer-overview');
      await p.getByText('Webhook deliveries are shown to admins').waitFor();
      await p.getByRole('heading', { name: 'Recent events' }).waitFor();
      expect(await p.getByRole('alert').count()).toBe(0);
      expect(await p.getByText(/Not allowed/).count()).toBe(0);
      expect(await p.getByRole('button', { name: 'Retry' }).count()).toBe(0);
      await screenshot(p, 'viewer-overview');
    },
    STEP,
  );
});
