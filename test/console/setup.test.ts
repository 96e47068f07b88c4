import { readFileSync } from 'node:fs';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli } from '../helpers/app.js';
import { expectAccessible, freePort, screenshot } from '../helpers/browser.js';
import {
  type ConsoleServer,
  type ConsoleWorkspace,
  expectNoHorizontalOverflow,
  openPage,
  signedInState,
  startConsoleServer,
} from '../helpers/console-server.js';
import { SNIPPETS, type SnippetReceiver, snippetPath, startSnippetReceiver } from '../helpers/snippet-receiver.js';

// Backends: sqlite — the setup checklist of the console bundle; the data it reads comes from the API, which runs on both backends in test/
// Tier: full — drives Chromium
// A new workspace's overview teaches the three steps to a first verified
// webhook (docs/console.md#setup-checklist), with the receivers of docs/snippets/ — the same files
// test/delivery/receiver-snippets.test.ts runs — and turns each step done from the workspace's own data. In
// Debian's Chromium against a real `wsvc serve`; light, dark and 390 px.
const STEP = 180_000;
const PHONE = { width: 390, height: 844 };
/** The refetch interval of the overview (console/src/lib/queries.ts). */
const LIVE_INTERVAL_MS = 5000;
const TITLE = 'Your first verified webhook';

let cs: ConsoleServer;
let acme: ConsoleWorkspace;
let ws: string;
const receivers: SnippetReceiver[] = [];

beforeAll(async () => {
  cs = await startConsoleServer();
  // `workspaces create` makes a live and a test key too; unused and made by the command, they
  // leave step 1 to do (the person signing in has never seen them).
  acme = await cs.workspace({ name: 'Fresh', adminEmail: 'admin@fresh.test', adminName: 'Ada' });
  ws = acme.id;
}, STEP);

afterAll(async () => {
  for (const r of receivers) await r.close();
  await cs?.close();
});

const path = (rest: string) => acme.path(rest);
const checklist = (p: Page) => p.getByRole('region', { name: TITLE });

/** The three steps' headings, each with its state ("To do", "Done" or "Ask an admin"). */
async function steps(list: Locator): Promise<string[]> {
  return list.getByRole('listitem').getByRole('heading', { level: 3 }).allTextContents();
}
const KEY = 'Create an API key';
/** The key step while only the keys `wsvc workspaces create` printed exist, unused (cs.workspace makes them). */
const USE_KEY = 'Use an API key';
const ENDPOINT = 'Add a webhook endpoint';
const DELIVERY = 'Receive a verified delivery';

describe('the setup checklist on a new workspace', () => {
  let page: Page;

  beforeAll(async () => {
    page = await cs.page({ signedIn: acme.signedIn });
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: cs.base });
    // The page's timers run on Playwright's clock: the last test moves them past the overview's 5 s
    // refresh instead of waiting for it (time otherwise flows as usual).
    await page.clock.install();
  }, STEP);

  it(
    'shows 0 of 3 with the receivers of docs/snippets in tabs; Copy puts the file on the clipboard',
    async () => {
      await openPage(page, path('/overview'), 'Overview', 'setup-empty');
      const list = checklist(page);
      await list.getByText('0 of 3 done').waitFor();
      expect(await steps(list)).toEqual([`${USE_KEY} To do`, `${ENDPOINT} To do`, `${DELIVERY} To do`]);
      await list.getByText('wsvc workspaces create printed a live and a test key', { exact: false }).waitFor();
      await screenshot(page, 'setup-empty');
      for (const s of SNIPPETS) {
        const text = readFileSync(snippetPath(s.file), 'utf8');
        const tab = list.getByRole('tab', { name: s.name });
        await tab.click();
        expect(await tab.getAttribute('aria-selected')).toBe('true');
        const code = list.getByRole('region', { name: `${s.file} (${s.name})` });
        expect(await code.isVisible()).toBe(true);
        expect(await code.textContent()).toBe(text);
        await list.getByRole('button', { name: `Copy ${s.file}` }).click();
        await list.getByRole('status').filter({ hasText: 'Copied.' }).waitFor();
        expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(text);
      }
      // The tabs follow the arrow keys.
      await list.getByRole('tab', { name: 'Python' }).press('ArrowLeft');
      expect(await list.getByRole('tab', { name: 'Node' }).getAttribute('aria-selected')).toBe('true');
      await expect.poll(() => page.evaluate(() => document.activeElement?.textContent)).toBe('Node');
      await expectAccessible(page, 'setup-tabs');
    },
    STEP,
  );

  it(
    'dark mode and a 390×844 phone: axe clean, no sideways scrolling, the code scrolls inside its frame',
    async () => {
      const d = await cs.page({ colorScheme: 'dark', signedIn: acme.signedIn });
      await openPage(d, path('/overview'), 'Overview', 'setup-dark');
      await checklist(d).getByText('0 of 3 done').waitFor();
      expect(await d.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).toBe(
        'rgb(13, 17, 23)',
      );
      await checklist(d).getByRole('tab', { name: 'Python' }).click();
      await expectAccessible(d, 'setup-dark-python');
      await screenshot(d, 'setup-dark');

      for (const colorScheme of ['light', 'dark'] as const) {
        const p = await cs.page({ viewport: PHONE, colorScheme, signedIn: acme.signedIn });
        await openPage(p, path('/overview'), 'Overview', `setup-phone-${colorScheme}`);
        await checklist(p).getByText('0 of 3 done').waitFor();
        for (const s of SNIPPETS) {
          await checklist(p).getByRole('tab', { name: s.name }).click();
          await expectNoHorizontalOverflow(p, `setup ${s.file} at 390 px (${colorScheme})`);
          const frame = await checklist(p)
            .getByRole('region', { name: `${s.file} (${s.name})` })
            .evaluate((el) => ({ sw: el.scrollWidth, cw: el.clientWidth, right: el.getBoundingClientRect().right }));
          expect(frame.sw).toBeGreaterThan(frame.cw);
          expect(frame.right).toBeLessThanOrEqual(PHONE.width);
        }
        await expectAccessible(p, `setup-phone-${colorScheme}`);
        await screenshot(p, `setup-phone-${colorScheme}`);
      }
    },
    STEP,
  );

  it(
    "a viewer sees the key step and the others as an admin's, without an error box",
    async () => {
      const invite = await cs.services.members.invite(asCli(cs.services), ws, {
        email: 'viewer@fresh.test',
        role: 'viewer',
      });
      const p = await cs.page({ signedIn: await signedInState(cs.base, invite.invite_url) });
      await openPage(p, path('/overview'), 'Overview', 'setup-viewer');
      const list = checklist(p);
      await list.getByRole('link', { name: 'Create an API key' }).waitFor();
      expect(await steps(list)).toEqual([`${KEY} To do`, `${ENDPOINT} Ask an admin`, `${DELIVERY} Ask an admin`]);
      expect(await list.getByRole('link', { name: 'Add a webhook endpoint' }).count()).toBe(0);
      expect(await list.getByRole('button', { name: 'Send a test event' }).count()).toBe(0);
      expect(await p.getByRole('alert').count()).toBe(0);
      expect(await p.getByText(/Not allowed/).count()).toBe(0);
      expect(await p.getByRole('button', { name: 'Retry' }).count()).toBe(0);
      await screenshot(p, 'setup-viewer');
    },
    STEP,
  );

  it(
    'key and endpoint from its links, a test event to the Node snippet: each step turns done, then "Setup complete"; Hide is remembered',
    async () => {
      await openPage(page, path('/overview'), 'Overview', 'setup-start');
      const list = checklist(page);
      await list.getByText('0 of 3 done').waitFor();

      // 1. A key, from the step's link.
      await list.getByRole('link', { name: 'Create an API key' }).click();
      await page.getByRole('heading', { name: 'API Keys', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Generate New Key' }).click();
      await page.getByLabel('Name').fill('Receiver tryout');
      await page.getByLabel('Environment').selectOption('live');
      await page.getByRole('button', { name: 'Generate key' }).click();
      expect(await page.getByLabel('API key', { exact: true }).inputValue()).toMatch(/^svc_live_/);
      await page.getByRole('button', { name: 'Done' }).click();
      await page.getByRole('link', { name: 'Overview', exact: true }).click();
      await list.getByText('1 of 3 done').waitFor();
      expect(await steps(list)).toEqual([`${KEY} Done`, `${ENDPOINT} To do`, `${DELIVERY} To do`]);
      expect(await list.getByText('Add an endpoint first.').count()).toBe(1);

      // 2. An endpoint, from the step's link, at the address where the snippet will listen.
      const port = await freePort();
      await list.getByRole('link', { name: 'Add a webhook endpoint' }).click();
      await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByLabel('Endpoint URL').fill(`http://127.0.0.1:${port}/`);
      await page.getByLabel('Label').fill('My receiver');
      await page.getByRole('button', { name: 'Add endpoint' }).last().click();
      const secret = await page.getByLabel('Signing secret', { exact: true }).inputValue();
      expect(secret).toMatch(/^whsec_/);
      await page.getByRole('button', { name: 'Done' }).click();
      await page.getByRole('link', { name: 'Overview', exact: true }).click();
      await list.getByText('2 of 3 done').waitFor();
      expect(await steps(list)).toEqual([`${KEY} Done`, `${ENDPOINT} Done`, `${DELIVERY} To do`]);
      await expectAccessible(page, 'setup-two-done');

      // 3. A test event before the receiver runs: queued and confirmed, with a link to its attempts;
      // nothing answers, so the step stays to do.
      const send = list.getByRole('button', { name: 'Send a test event' });
      await send.click();
      const queued = list.getByRole('status').filter({ hasText: 'Test event queued as' });
      await queued.waitFor();
      const first = /dlv_[0-9A-Z]{26}/.exec((await queued.textContent()) ?? '')?.[0];
      expect(first).toBeDefined();
      expect(await list.getByRole('link', { name: 'See its attempts' }).getAttribute('href')).toContain(
        `?delivery=${first}`,
      );
      await screenshot(page, 'setup-two-done');
      // The Node snippet, run as the console shows it, with that secret: the next test event is
      // verified, and the step turns done by itself (the overview asks again every 5 s), no reload.
      const rx = await startSnippetReceiver(SNIPPETS[0], secret, port);
      receivers.push(rx);
      await page.evaluate(() => {
        (window as unknown as { __kept: boolean }).__kept = true;
      });
      await send.click();
      const verified = /^verified evt_[0-9A-Z]{26} webhook\.test \(webhook-signature, X-Service-Signature\)$/;
      await expect.poll(() => rx.lines.some((l) => verified.test(l))).toBe(true);
      // Verified: the overview's next refresh turns the step done.
      await page.clock.runFor(LIVE_INTERVAL_MS);
      const done = page.getByRole('region', { name: 'Setup', exact: true });
      await done.getByText('Setup complete').waitFor();
      expect(await page.evaluate(() => (window as unknown as { __kept?: boolean }).__kept)).toBe(true);
      expect(await checklist(page).count()).toBe(0);
      await expectAccessible(page, 'setup-complete');
      await screenshot(page, 'setup-complete');

      // Hidden, and still hidden after a reload (this browser's localStorage).
      await done.getByRole('button', { name: 'Hide' }).click();
      expect(await done.count()).toBe(0);
      await page.reload();
      await page.getByRole('heading', { name: 'Recent events' }).waitFor();
      expect(await page.getByRole('region', { name: 'Setup', exact: true }).count()).toBe(0);
      expect(
        await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('wsvc-setup-hidden:'))),
      ).toEqual([`wsvc-setup-hidden:${ws}:live`]);
    },
    STEP,
  );
});
