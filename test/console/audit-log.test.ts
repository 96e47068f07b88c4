// Backends: sqlite — the Audit log page of the console bundle against a real `wsvc serve`
// Tier: full — drives Chromium

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli } from '../helpers/app.js';
import { entriesOf } from '../helpers/audit-entries.js';
import { expectAccessible, screenshot } from '../helpers/browser.js';
import { PASSWORD } from '../helpers/console.js';
import {
  type ConsoleServer,
  type ConsoleWorkspace,
  expectNoHorizontalOverflow,
  loaded,
  openPage,
  signedInState,
  startConsoleServer,
} from '../helpers/console-server.js';

// The Audit log page (docs/console.md#pages): an admin reads who changed what, filters, opens an entry's changes,
// exports the filtered range as NDJSON, and follows "History" from a member's row; on a phone (rows stacked) in light
// and dark mode. A passkey added, renamed, signed in with and removed on the Profile page: one entry each.
const STEP = 120_000;
const PHONE = { width: 390, height: 844 };

let cs: ConsoleServer;
let acme: ConsoleWorkspace;
let memberId: string;
let viewerLink: string;
let resourceId: string;

beforeAll(async () => {
  // Passkeys need a domain name: the relying party id is PUBLIC_URL's host name, and an IP address is not one.
  cs = await startConsoleServer({ host: 'localhost' });
  acme = await cs.workspace({ name: 'Acme', adminEmail: 'admin@acme.test', adminName: 'Ada' });
  resourceId = (await acme.v1('POST', '/resources', { name: 'Audited', type: 'standard' })).data.id;
  const invited = await cs.services.members.invite(asCli(cs.services), acme.id, {
    email: 'mo@acme.test',
    role: 'member',
    name: 'Mo',
  });
  memberId = invited.user.id;
  viewerLink = (
    await cs.services.members.invite(asCli(cs.services), acme.id, { email: 'vi@acme.test', role: 'viewer' })
  ).invite_url;
}, STEP);

afterAll(async () => {
  await cs?.close();
});

/**
 * The page fits the window: nothing wider than it (document.documentElement.scrollWidth <= clientWidth), and the
 * log's table does not scroll sideways inside its frame either: on a phone its rows are stacked.
 */
async function expectFits(p: Page, name: string) {
  await expectNoHorizontalOverflow(p, name);
  const { doc, frames } = await p.evaluate(() => ({
    doc: { scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth },
    frames: [...document.querySelectorAll('.table-wrap')].map((f) => ({
      scroll: f.scrollWidth,
      client: f.clientWidth,
    })),
  }));
  expect(doc.scroll, `${name}: the page is ${doc.scroll} px wide in ${doc.client} px`).toBeLessThanOrEqual(doc.client);
  expect(frames.length, `${name}: the log's table`).toBeGreaterThan(0);
  for (const f of frames) {
    expect(f.scroll, `${name}: the table is ${f.scroll} px wide in a ${f.client} px frame`).toBeLessThanOrEqual(
      f.client,
    );
  }
}

/** The rows of the log's table (one per entry; an entry's open changes add a row of their own). */
const actionsShown = (p: Page) =>
  p.locator('.table-wrap > table > tbody > tr:not(.payload-row) > td:nth-child(3)').allTextContents();

describe('the Audit log page', () => {
  it(
    "an admin's change made in the console is the newest entry, with its actor, target and before/after",
    async () => {
      const p = await cs.page({ signedIn: acme.signedIn });
      // The role change through the members page (a real door), then the log.
      await openPage(p, acme.path('/settings/members'), 'Members', 'audit-members');
      await p.getByLabel('Role of mo@acme.test').selectOption('viewer');
      await p.getByRole('button', { name: 'Change role' }).click();
      await p.getByRole('dialog').waitFor({ state: 'detached' });
      await p.getByRole('link', { name: 'Audit log' }).click();
      await p.getByRole('heading', { name: 'Audit log', exact: true }).waitFor();
      await loaded(p);
      await expectAccessible(p, 'audit-log');
      // The period, as GET /v1/audit-log's meta.retention_days says it (AUDIT_RETENTION_DAYS, 400 by default).
      expect(await p.getByTestId('kept-for').textContent()).toBe('Kept for 400 days.');
      const actions = await actionsShown(p);
      expect(actions[0]).toBe('member.role_changed');
      expect(actions).toContain('member.invited');
      expect(actions).toContain('resource.created');
      // The time in the profile's zone (UTC here: no timezone set), the exact UTC value on hover.
      const time = p.locator('.table-wrap > table > tbody > tr').first().locator('time');
      expect(await time.getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      // The changes, as before and after.
      await p.getByRole('button', { name: /Show the changes of member\.role_changed/ }).click();
      const diff = p.getByRole('table', { name: /Changes of member\.role_changed/ });
      await diff.waitFor();
      expect(await diff.locator('tbody tr').first().textContent()).toMatch(/^role\s*member\s*viewer$/);
      await expectAccessible(p, 'audit-log-changes');
      await screenshot(p, 'audit-log-changes');
    },
    STEP,
  );

  it(
    'filters by action (a family), target and actor; "History" on a member opens the log filtered to them',
    async () => {
      const p = await cs.page({ signedIn: acme.signedIn });
      await openPage(p, acme.path('/settings/audit-log?action=member.'), 'Audit log', 'audit-log-members');
      const actions = await actionsShown(p);
      expect(actions.length).toBeGreaterThanOrEqual(3);
      expect(actions.every((a) => a.startsWith('member.'))).toBe(true);
      // History from the member's row.
      await openPage(p, acme.path('/settings/members'), 'Members', 'audit-members-history');
      await p.getByRole('link', { name: 'History of mo@acme.test' }).click();
      await p.getByRole('heading', { name: 'Audit log', exact: true }).waitFor();
      await loaded(p);
      expect(new URL(p.url()).searchParams.get('target')).toBe(memberId);
      const rows = p.locator('.table-wrap > table > tbody > tr:not(.payload-row)');
      expect(await rows.count()).toBe(2); // invited, then role changed
      // A resource's History.
      await openPage(p, acme.path(`/resources/${resourceId}`), 'Audited', 'audit-resource-history');
      await p.getByRole('link', { name: 'History of Audited' }).click();
      await p.getByRole('heading', { name: 'Audit log', exact: true }).waitFor();
      await loaded(p);
      expect(await actionsShown(p)).toEqual(['resource.created']);
      // No match: the empty state says so.
      await openPage(p, acme.path('/settings/audit-log?target=res_nothing'), 'Audit log', 'audit-log-empty');
      await p.getByText('No entries match these filters.').waitFor();
    },
    STEP,
  );

  it(
    'Export NDJSON downloads every entry of the filtered range, one JSON object a line',
    async () => {
      const p = await cs.page({ signedIn: acme.signedIn, acceptDownloads: true });
      await openPage(p, acme.path('/settings/audit-log?action=member.'), 'Audit log', 'audit-log-export');
      const [download] = await Promise.all([
        p.waitForEvent('download'),
        p.getByRole('button', { name: 'Export NDJSON' }).click(),
      ]);
      expect(download.suggestedFilename()).toBe(`audit-log-${acme.id}.ndjson`);
      // The browser is remote (the worker's shared Chromium): the file is copied here.
      const file = join(mkdtempSync(join(tmpdir(), 'audit-export-')), 'export.ndjson');
      await download.saveAs(file);
      const text = readFileSync(file, 'utf8');
      const lines = text.trimEnd().split('\n');
      const entries = lines.map((l) => JSON.parse(l) as { action: string; seq: number });
      expect(entries.length).toBe((await actionsShown(p)).length);
      expect(entries.every((e) => e.action.startsWith('member.'))).toBe(true);
      // Newest first, as the page.
      expect(entries.map((e) => e.seq)).toEqual([...entries.map((e) => e.seq)].sort((a, b) => b - a));
    },
    STEP,
  );

  it(
    'fits 390 px in light and dark (rows stacked, nothing scrolls sideways), is axe clean in dark mode, and a viewer is told the log is for admins',
    async () => {
      for (const colorScheme of ['light', 'dark'] as const) {
        const phone = await cs.page({ viewport: PHONE, colorScheme, signedIn: acme.signedIn });
        await openPage(phone, acme.path('/settings/audit-log'), 'Audit log', `phone-audit-log-${colorScheme}`);
        await expectFits(phone, `audit log (${colorScheme})`);
        // Each cell names its column, as the table's headings would.
        expect(
          await phone
            .locator('.table-wrap > table > tbody > tr:not(.payload-row) > td')
            .first()
            .getAttribute('data-label'),
        ).toBe('Time');
        // The entry with the most changes open: the workspace's creation (its name, admin and keys).
        await phone.getByRole('button', { name: /Show the changes of workspace\.created/ }).click();
        await phone.getByRole('table', { name: /Changes of workspace\.created/ }).waitFor();
        await expectFits(phone, `audit log, an entry open (${colorScheme})`);
        await screenshot(phone, `phone-audit-log-${colorScheme}`);
        await expectAccessible(phone, `phone-audit-log-${colorScheme}`);
      }
      const dark = await cs.page({ colorScheme: 'dark', signedIn: acme.signedIn });
      await openPage(dark, acme.path('/settings/audit-log'), 'Audit log', 'dark-audit-log');
      await dark
        .getByRole('button', { name: /Show the changes of/ })
        .first()
        .click();
      await expectAccessible(dark, 'dark-audit-log-open');
      await screenshot(dark, 'dark-audit-log');
      const viewer = await cs.page({ signedIn: await signedInState(cs.base, viewerLink) });
      await openPage(viewer, acme.path('/settings/audit-log'), 'Audit log', 'viewer-audit-log');
      await viewer.getByText('Only admins of this workspace can read its audit log.').waitFor();
      expect(await viewer.getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    },
    STEP,
  );
  it(
    'a passkey added on the Profile page, renamed, signed in with, then removed: one entry each, as the admin',
    async () => {
      // A session of its own (its sign-out must not end the one the other tests share).
      const p = await cs.page();
      await p.goto(`${cs.base}/console/sign-in`);
      await p.getByLabel('Email').fill(acme.adminEmail);
      await p.getByLabel('Password').fill(PASSWORD);
      await p.getByRole('button', { name: 'Sign in', exact: true }).click();
      await p.getByRole('heading', { name: 'Overview' }).waitFor();
      const cdp = await p.context().newCDPSession(p);
      await cdp.send('WebAuthn.enable');
      await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: {
          protocol: 'ctap2',
          transport: 'internal',
          hasResidentKey: true,
          hasUserVerification: true,
          isUserVerified: true,
          automaticPresenceSimulation: true,
        },
      });
      const admin = (await cs.services.users.listAll(acme.id)).find((u) => u.email === acme.adminEmail);
      const added = await entriesOf(cs, acme.id, async () => {
        await openPage(p, acme.path('/settings/profile'), 'Profile', 'audit-profile');
        await p.getByLabel('Passkey name').fill('Laptop');
        await p.getByRole('button', { name: 'Add a passkey' }).click();
        await p.getByText('Passkey added.').waitFor();
      });
      expect(added.map((e) => [e.action, e.actor_id, e.target_id])).toEqual([
        ['user.passkey_added', admin?.id, admin?.id],
      ]);
      expect(added[0]?.changes).toMatchObject({ passkey: { before: null, after: { name: 'Laptop' } } });
      expect(added[0]?.user_agent).toMatch(/Chrome/);
      // Renamed on the Profile page: user.passkey_renamed, its name before and after.
      const renamed = await entriesOf(cs, acme.id, async () => {
        await p.getByRole('button', { name: 'Rename Laptop' }).click();
        await p.getByLabel('New name for Laptop').fill('Work laptop');
        await p.getByRole('button', { name: 'Save name' }).click();
        await p.getByRole('button', { name: 'Rename Work laptop' }).waitFor();
      });
      expect(renamed.map((e) => [e.action, e.actor_type, e.actor_id, e.target_type, e.target_id])).toEqual([
        ['user.passkey_renamed', 'user', admin?.id, 'user', admin?.id],
      ]);
      const passkeyId = (added[0]?.changes.passkey?.after as { id?: string } | undefined)?.id;
      expect(passkeyId).toMatch(/^pk/);
      expect(renamed[0]?.changes).toEqual({
        passkey: { before: { id: passkeyId, name: 'Laptop' }, after: { id: passkeyId, name: 'Work laptop' } },
      });
      expect(renamed[0]?.user_agent).toMatch(/Chrome/);
      // The same name again changes nothing: no entry.
      expect(
        await entriesOf(cs, acme.id, async () => {
          await p.getByRole('button', { name: 'Rename Work laptop' }).click();
          await p.getByRole('button', { name: 'Save name' }).click();
          await p.getByRole('button', { name: 'Rename Work laptop' }).waitFor();
        }),
      ).toEqual([]);
      const signedIn = await entriesOf(cs, acme.id, async () => {
        await p.getByRole('button', { name: 'Sign out' }).click();
        await p.getByRole('button', { name: 'Sign in with a passkey' }).click();
        await p.getByRole('heading', { name: 'Overview' }).waitFor();
      });
      expect(signedIn.map((e) => e.action)).toEqual(['session.signed_out', 'session.signed_in']);
      expect(signedIn[1]?.changes).toMatchObject({ method: { before: null, after: 'passkey' } });
      const removed = await entriesOf(cs, acme.id, async () => {
        await openPage(p, acme.path('/settings/profile'), 'Profile', 'audit-profile-passkey');
        await p.getByRole('button', { name: 'Remove Work laptop' }).click();
        await p
          .getByRole('dialog', { name: 'Remove this passkey?' })
          .getByRole('button', { name: 'Remove passkey' })
          .click();
        await p.getByText('No passkeys yet.').waitFor();
      });
      expect(removed.map((e) => e.action)).toEqual(['user.passkey_removed']);
    },
    STEP,
  );
});
