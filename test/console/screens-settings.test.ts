// Backends: sqlite — the settings, billing, audit log and workspace pages of the console bundle at two sizes and in two schemes
// Tier: full — drives Chromium
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { asCli } from '../helpers/app.js';
import { expectAccessible, screenshot } from '../helpers/browser.js';
import { openPage, signedInState } from '../helpers/console-server.js';
import { describeScreens, STEP } from './screens-fixture.js';

// The workspace's settings: keys, members, the profile, billing with a finalized invoice, sign-in
// security, the audit log and the workspace page (its data export and danger zone) (test/console/screens-fixture.ts).
const { seeded } = describeScreens('settings', { billing: true }, [
  {
    name: 'keys',
    url: (s) => s.at('/settings/keys'),
    heading: 'API Keys',
    doc: 'console-keys',
    ready: (p) => p.getByText('Analytics export').first().waitFor(),
  },
  {
    name: 'members',
    url: (s) => s.at('/settings/members'),
    heading: 'Members',
    ready: (p) => p.getByText('linus@acme.test').first().waitFor(),
  },
  { name: 'profile', url: (s) => s.at('/settings/profile'), heading: 'Profile' },
  {
    name: 'billing',
    url: (s) => s.at('/settings/billing'),
    heading: 'Billing',
    doc: 'console-billing',
    ready: (p) => p.getByRole('heading', { name: /^Plan: Pro/ }).waitFor(),
  },
  { name: 'invoice', url: (s) => s.at(`/settings/billing/invoices/${s.invoiceId}`), heading: 'Invoice INV-1' },
  {
    name: 'security',
    url: (s) => s.at('/settings/security'),
    heading: 'Sign-in security',
    ready: (p) => p.getByRole('button', { name: 'Save single sign-on' }).waitFor(),
  },
  {
    name: 'audit-log',
    url: (s) => s.at('/settings/audit-log'),
    heading: 'Audit log',
    ready: (p) => p.getByRole('table', { name: 'Audit log' }).waitFor(),
  },
  {
    name: 'workspace',
    url: (s) => s.at('/settings/workspace'),
    heading: 'Workspace',
    // No export yet: the list's empty state, above the danger zone.
    ready: (p) => p.getByText('No export yet. Request one above.').waitFor(),
  },
]);

/** How often the console asks again while an export is being written (console/src/lib/queries.ts). */
const LIVE_INTERVAL_MS = 5000;

// Settings → Workspace → Data export (docs/console.md#pages, docs/data-lifecycle.md#export). Last in the file: the
// screens above show the list empty.
describe('the data export of the workspace page', () => {
  it(
    'an admin requests an export, sees it written and downloads the archive; a member is told only admins can',
    async () => {
      const s = seeded();
      const p = await s.cs.page({ signedIn: s.acme.signedIn, acceptDownloads: true });
      // The page's 5 s refresh runs on Playwright's clock: the test moves it instead of waiting.
      await p.clock.install();
      await openPage(p, s.at('/settings/workspace'), 'Workspace', 'workspace-export-empty');
      await p.getByText('No export yet. Request one above.').waitFor();
      await p.getByRole('button', { name: 'Request export' }).click();
      const table = p.getByRole('table', { name: 'Exports' });
      await table.locator('tbody > tr').first().waitFor();
      expect(await table.locator('tbody > tr').count()).toBe(1);
      const [exp] = (
        await s.acme.v1<{ id: string; status: string; size_bytes: number; sha256: string }[]>('GET', '/exports')
      ).data;
      if (!exp) throw new Error('no export listed after the request');
      expect(['queued', 'running', 'ready']).toContain(exp.status);

      // The exports job, as the scheduler runs it (the served process's own job may have taken it first: then this
      // run finds nothing to do, and the page still follows the other run to its end).
      await s.cs.services.exports.runDue(s.cs.services.uow.as(systemActor('scheduler:exports')));
      const ready = table.getByText('Ready', { exact: true });
      await expect
        .poll(
          async () => {
            await p.clock.runFor(LIVE_INTERVAL_MS);
            return ready.count();
          },
          { timeout: 60_000 },
        )
        .toBe(1);
      const done = (
        await s.acme.v1<{ id: string; status: string; size_bytes: number; sha256: string }>('GET', `/exports/${exp.id}`)
      ).data;
      expect(done.status).toBe('ready');
      await table.getByText('9 of 9 kinds', { exact: false }).waitFor();
      await expectAccessible(p, 'workspace-export-ready');
      await screenshot(p, 'workspace-export-ready');

      // Download: the console API's answer is the archive, saved under the server's file name.
      const [download, response] = await Promise.all([
        p.waitForEvent('download'),
        p.waitForResponse((r) => new URL(r.url()).pathname === `/console/api/v1/exports/${exp.id}/download`),
        p.getByRole('button', { name: `Download export ${exp.id}` }).click(),
      ]);
      expect(response.status()).toBe(200);
      expect(response.headers()['content-type']).toBe('application/gzip');
      expect(download.suggestedFilename()).toBe(`workspace-${s.ws}-${exp.id}.tar.gz`);
      // The browser is remote (the worker's shared Chromium): the file is copied here.
      const file = join(mkdtempSync(join(tmpdir(), 'console-export-')), 'export.tar.gz');
      await download.saveAs(file);
      const bytes = readFileSync(file);
      expect(bytes.length).toBe(done.size_bytes);
      expect(createHash('sha256').update(bytes).digest('hex')).toBe(done.sha256);

      // A member: the page says who can export, and offers no request.
      const link = (
        await s.cs.services.members.invite(asCli(s.cs.services), s.ws, {
          email: 'export-member@acme.test',
          role: 'member',
        })
      ).invite_url;
      const member = await s.cs.page({ signedIn: await signedInState(s.cs.base, link) });
      await openPage(member, s.at('/settings/workspace'), 'Workspace', 'workspace-export-member');
      await member.getByText('Only admins of this workspace can export its data or delete it.').waitFor();
      expect(await member.getByRole('button', { name: 'Request export' }).count()).toBe(0);
    },
    STEP,
  );
});
