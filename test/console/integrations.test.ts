import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectAccessible } from '../helpers/browser.js';
import { type ConsoleServer, type ConsoleWorkspace, openPage, startConsoleServer } from '../helpers/console-server.js';

// Backends: sqlite — the Integrations page in Chromium; the integrations API runs on both backends in test/integrations
// Tier: full — drives Chromium
// The console's Integrations page (docs/integrations.md) in Chromium: the empty state, the connect
// dialog refusing a URL off the platform's host (the rule shown at the field), an integration's row
// with its URL hint only, "send test" queuing a message that the log shows, disable, delete with
// confirmation, axe on each state. The server's DNS cannot resolve hooks.slack.com here, so the
// connected integration is written to the database directly (creation is covered by test/integrations/integrations.test.ts).
const STEP = 120_000;
let cs: ConsoleServer;
let acme: ConsoleWorkspace;
let page: Page;

beforeAll(async () => {
  cs = await startConsoleServer();
  acme = await cs.workspace({ name: 'Chat', adminEmail: 'chat@acme.test', adminName: 'Cy' });
  page = await cs.page({ signedIn: acme.signedIn });
}, STEP);

afterAll(async () => {
  await cs?.close();
});

describe('console integrations', () => {
  it(
    'empty state; a URL off the platform host is refused at the field; list, test, log, disable, delete',
    async () => {
      await openPage(page, acme.path('/settings/integrations'), 'Integrations', 'integrations-empty');
      await page.getByText('No integrations yet.').waitFor();
      await page.getByRole('button', { name: 'Connect Slack' }).click();
      const dialog = page.getByRole('dialog', { name: 'Connect Slack' });
      await dialog.getByLabel('Webhook URL').fill('https://example.com/services/T/B/x');
      await dialog.getByLabel('all events (*)').check();
      await dialog.getByRole('button', { name: 'Connect' }).click();
      await dialog.getByRole('alert').filter({ hasText: 'hooks.slack.com/services' }).waitFor();
      await expectAccessible(page, 'integrations-connect-refused');
      await dialog.getByRole('button', { name: 'Cancel' }).click();

      await acme.connectSlack();
      await page.reload();
      const table = page.getByRole('table', { name: 'Integrations' });
      await table.waitFor();
      expect(await table.textContent()).toContain('hooks.slack.com …AB12');
      expect(await page.content()).not.toContain('secretpart');
      await expectAccessible(page, 'integrations-list');
      await page.getByRole('button', { name: 'Send a test message to Slack hooks.slack.com …AB12' }).click();
      await page.getByRole('status').filter({ hasText: 'Test message queued' }).waitFor();
      await page.getByRole('button', { name: 'Message log of Slack hooks.slack.com …AB12' }).click();
      const log = page.getByRole('dialog', { name: /Messages to Slack/ });
      await log.getByRole('table', { name: 'Messages' }).waitFor();
      expect(await log.textContent()).toContain('test: test');
      await expectAccessible(page, 'integrations-log');
      await log.getByRole('button', { name: 'Close' }).click();
      await page.getByRole('button', { name: 'Disable Slack hooks.slack.com …AB12' }).click();
      await page.getByRole('button', { name: 'Enable Slack hooks.slack.com …AB12' }).waitFor();
      await page.getByRole('button', { name: 'Delete Slack hooks.slack.com …AB12' }).click();
      await page
        .getByRole('dialog', { name: 'Delete this integration?' })
        .getByRole('button', { name: 'Delete integration' })
        .click();
      await page.getByText('No integrations yet.').waitFor();
      expect(await cs.storage.db.selectFrom('integration_messages').selectAll().execute()).toEqual([]);
    },
    STEP,
  );
});
