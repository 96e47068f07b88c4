import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli } from '../helpers/app.js';
import { expectAccessible, screenshot } from '../helpers/browser.js';
import { type ConsoleServer, type ConsoleWorkspace, openPage, startConsoleServer } from '../helpers/console-server.js';

// Backends: sqlite — the lists, search and live updates of the console bundle; ordering and name_prefix run on both backends in test/api/paging-order.test.ts
// Tier: full — drives Chromium
// Lists newest first with "Load older", search, the item just created
// or sent shown at once with a confirmation, and pages that update by themselves (every 5 s while
// visible) — in Debian's Chromium against a real `wsvc serve`.
const STEP = 180_000;
/** The refetch interval of the live lists (console/src/lib/queries.ts). */
const LIVE_INTERVAL_MS = 5000;

let cs: ConsoleServer;
let acme: ConsoleWorkspace;
let ws: string;
let webhookId: string;
const resourceIds: string[] = [];
let page: Page;

beforeAll(async () => {
  cs = await startConsoleServer();
  acme = await cs.workspace({ name: 'Acme', adminEmail: 'admin@acme.test', adminName: 'Ada' });
  ws = acme.id;
  webhookId = (await acme.v1('POST', '/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'], label: 'Sink' }))
    .data.id;
  // 60 resources: 60 events and 60 deliveries, more than one page (50) of each list.
  for (let i = 1; i <= 60; i++) {
    resourceIds.push(
      (await acme.v1('POST', '/resources', { name: `Item ${String(i).padStart(2, '0')}`, type: 'standard' })).data.id,
    );
  }
  page = await cs.page({ signedIn: acme.signedIn });
  // The page's timers run on Playwright's clock: a test moves them past the 5 s refresh instead of
  // waiting for it (time otherwise flows as usual).
  await page.clock.install();
}, STEP);

afterAll(async () => {
  await cs?.close();
});

/** Lets the page's 5 s refresh come due (console/src/lib/queries.ts), on its own clock. */
const nextRefresh = () => page.clock.runFor(LIVE_INTERVAL_MS);

const path = (rest: string) => acme.path(rest);
const rowsOf = (p: Page, caption: string) => p.getByRole('table', { name: caption }).locator('tbody > tr');

/** Marks the document, so a later check can tell the page was not reloaded. */
async function mark(p: Page) {
  await p.evaluate(() => {
    (window as unknown as { __kept: boolean }).__kept = true;
  });
}
async function notReloaded(p: Page) {
  expect(await p.evaluate(() => (window as unknown as { __kept?: boolean }).__kept)).toBe(true);
}

describe('lists newest first, search, confirmations and live updates', () => {
  it(
    'delivery log: newest first, Load older to the oldest; a test event becomes the first row by itself (5 s refresh), without a reload',
    async () => {
      await openPage(page, path(`/webhooks/${webhookId}`), 'Sink', 'lists-delivery-log');
      const rows = rowsOf(page, 'Deliveries');
      await rows.first().waitFor();
      expect(await rows.count()).toBe(50);
      await page.getByText(/^Live, every 5 s/).waitFor();
      await page.getByRole('button', { name: 'Load older' }).click();
      await expect.poll(() => rows.count()).toBe(60);
      expect(await page.getByRole('button', { name: 'Load older' }).count()).toBe(0);
      await mark(page);
      // A test event sent elsewhere (the API) shows up by itself, first.
      const sent = (await acme.v1('POST', `/webhooks/${webhookId}/test`)).data.id;
      await nextRefresh();
      await expect.poll(() => rows.first().textContent()).toContain('webhook.test');
      expect(await rows.count()).toBe(61);
      await notReloaded(page);
      expect(sent).toMatch(/^dlv_/);
      // Sent from the page: confirmed, with the delivery's id, and first in the log at once.
      await page.getByRole('button', { name: 'Send test event' }).click();
      const status = page.getByRole('status').filter({ hasText: 'Test event queued as' });
      await status.waitFor();
      const id = /dlv_[0-9A-Z]{26}/.exec((await status.textContent()) ?? '')?.[0];
      expect(id).toBeDefined();
      await expect.poll(() => rows.count()).toBe(62);
      expect(await rows.first().textContent()).toContain('webhook.test');
      await notReloaded(page);
      await expectAccessible(page, 'lists-delivery-log-sent');
      await screenshot(page, 'lists-delivery-log-sent');
    },
    STEP,
  );

  it(
    'the refresh stops while the tab is hidden and runs again when it is shown',
    async () => {
      await openPage(page, path(`/webhooks/${webhookId}`), 'Sink', 'lists-delivery-log');
      await rowsOf(page, 'Deliveries').first().waitFor();
      // The page counts its own requests for the log, apart for while the document is hidden.
      await page.evaluate(() => {
        const w = window as unknown as { __asked: { visible: number; hidden: number } };
        w.__asked = { visible: 0, hidden: 0 };
        const fetch = window.fetch;
        window.fetch = (input, init) => {
          const url = input instanceof Request ? input.url : String(input);
          if (url.includes('/deliveries')) w.__asked[document.hidden ? 'hidden' : 'visible']++;
          return fetch(input, init);
        };
      });
      const asked = () =>
        page.evaluate(() => (window as unknown as { __asked: { visible: number; hidden: number } }).__asked);
      const setHidden = (hidden: boolean) =>
        page.evaluate((h) => {
          Object.defineProperty(document, 'visibilityState', {
            configurable: true,
            get: () => (h ? 'hidden' : 'visible'),
          });
          Object.defineProperty(document, 'hidden', { configurable: true, get: () => h });
          document.dispatchEvent(new Event('visibilitychange'));
        }, hidden);
      // Visible: the log is asked again within one interval (5 s).
      await nextRefresh();
      await expect.poll(async () => (await asked()).visible).toBeGreaterThan(0);
      // Hidden for more than two intervals: nothing is asked.
      await setHidden(true);
      await page.clock.runFor(2 * LIVE_INTERVAL_MS + 1000);
      expect((await asked()).hidden).toBe(0);
      // Shown again: asked within one interval.
      const before = (await asked()).visible;
      await setHidden(false);
      await nextRefresh();
      await expect.poll(async () => (await asked()).visible).toBeGreaterThan(before);
    },
    STEP,
  );

  it(
    'resources: newest first; search by name prefix (case-sensitive) or exact id; a new one is first and confirmed',
    async () => {
      await openPage(page, path('/resources'), 'Resources', 'lists-resources');
      const rows = rowsOf(page, 'Resources');
      await rows.first().waitFor();
      expect(await rows.first().textContent()).toContain('Item 60');
      expect(await rows.count()).toBe(50);
      const search = page.getByRole('searchbox', { name: 'Search resources' });
      await search.fill('Item 0');
      await search.press('Enter');
      await expect.poll(() => rows.count()).toBe(9);
      expect(await rows.first().textContent()).toContain('Item 09');
      expect(await rows.last().textContent()).toContain('Item 01');
      expect(page.url()).toContain('name=Item+0');
      await expectAccessible(page, 'lists-resources-search');
      await screenshot(page, 'lists-resources-search');
      await search.fill('item');
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      await page.getByText('No resources match these filters.').waitFor();
      await page.getByRole('button', { name: 'Clear' }).click();
      await expect.poll(() => rows.count()).toBe(50);
      // An exact id opens that resource.
      await search.fill(resourceIds[4] as string);
      await search.press('Enter');
      await page.getByRole('heading', { name: 'Item 05', exact: true }).waitFor();

      await openPage(page, path('/resources'), 'Resources', 'lists-resources');
      await rows.first().waitFor();
      await page.getByRole('button', { name: 'New resource' }).click();
      await page.getByLabel('Name').fill('Fresh one');
      await page.getByRole('button', { name: 'Create resource' }).click();
      const status = page.getByRole('status').filter({ hasText: 'Created' });
      await status.waitFor();
      expect(await status.getByRole('link', { name: 'Fresh one' }).count()).toBe(1);
      await expect.poll(() => rows.first().textContent()).toContain('Fresh one');
      await expectAccessible(page, 'lists-resources-created');
      await screenshot(page, 'lists-resources-created');
    },
    STEP,
  );

  it(
    'the workspace switcher tells two workspaces of the same name apart by their ids',
    async () => {
      const other = await cs.services.workspaces.create(asCli(cs.services), {
        name: 'Acme',
        adminEmail: 'admin@acme.test',
      });
      await openPage(page, path('/overview'), 'Overview', 'lists-switcher');
      const options = await page.getByRole('combobox', { name: 'Workspace' }).locator('option').allTextContents();
      expect(options.sort()).toEqual([`Acme · ${other.workspace.id}`, `Acme · ${ws}`].sort());
    },
    STEP,
  );

  it(
    'overview: the 10 newest events, updated by themselves; events: newest first and by resource id',
    async () => {
      await openPage(page, path('/overview'), 'Overview', 'lists-overview');
      const items = page.getByRole('list', { name: 'Recent events, newest first' }).getByRole('listitem');
      await expect.poll(() => items.count()).toBe(10);
      await page.getByText(/^Live, every 5 s/).waitFor();
      await mark(page);
      const made = (await acme.v1('POST', '/resources', { name: 'Live one', type: 'premium' })).data.id;
      const newest = (await acme.v1('GET', `/events?resource_id=${made}`)) as unknown as { data: { id: string }[] };
      const eventId = newest.data[0]?.id as string;
      expect(eventId).toMatch(/^evt_/);
      await nextRefresh();
      // The sink's failed deliveries keep adding delivery.exhausted events, so the new one need not stay first: it is
      // among the ten, and the ten are newest first.
      await expect.poll(async () => (await items.allTextContents()).join('\n')).toContain(eventId);
      expect(await items.count()).toBe(10);
      const times = (await items.allTextContents()).map((t) => t.slice(0, 19));
      expect(times).toEqual([...times].sort().reverse());
      await notReloaded(page);

      await openPage(page, path('/events'), 'Events', 'lists-events');
      const rows = rowsOf(page, 'Events');
      await rows.first().waitFor();
      expect((await rows.allTextContents()).join('\n')).toContain(eventId);
      const search = page.getByRole('searchbox', { name: 'Resource id' });
      await search.fill(resourceIds[0] as string);
      await search.press('Enter');
      await expect.poll(() => rows.count()).toBe(1);
      expect(await rows.first().textContent()).toContain('resource.created');
      await expectAccessible(page, 'lists-events-resource');
    },
    STEP,
  );
});
