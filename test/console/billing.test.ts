import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemActor } from '../../src/kernel/principal.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { expectAccessible, screenshot } from '../helpers/browser.js';
import {
  type ConsoleServer,
  type ConsoleWorkspace,
  openPage,
  signedInState,
  startConsoleServer,
} from '../helpers/console-server.js';
import { CARDS, type StripeStandin, startStripeStandin } from '../helpers/stripe-standin.js';

// Backends: sqlite — the console bundle in Chromium; the billing API it calls runs on both backends in test/billing
// Tier: full — drives Chromium
// The console's billing page (docs/console.md#billing) in Chromium against a real `wsvc serve` with payments on
// (the Stripe stand-in on loopback): the card section loads, shows an error with Retry, and "Add a card" goes to
// the stand-in's Checkout page in setup mode, which Chromium submits and which comes back to the page showing the
// card; "Replace card" does it again; a move to a paid plan without a card is refused with the server's message;
// an admin upgrades free → pro and the upcoming invoice shows the prorated line with the amount
// the server computed; a downgrade over the lower plan's limits is refused with the server's
// message; a finalized invoice is in the history and prints as a clean page; a member sees that
// billing is for admins. axe on each state.
const STEP = 120_000;

let cs: ConsoleServer;
let acme: ConsoleWorkspace;
let ws: string;
let page: Page;
let stripe: StripeStandin;
const money = (cents: number) => `$${(cents / 100).toFixed(2).replace(/\B(?=(\d{3})+(?!\d))/g, ',')}`;

beforeAll(async () => {
  stripe = await startStripeStandin({
    secretKey: 'sk_test_standin0123456789',
    webhookSecret: 'whsec_standin0123456789',
  });
  cs = await startConsoleServer({
    env: {
      STRIPE_SECRET_KEY: 'sk_test_standin0123456789',
      STRIPE_WEBHOOK_SECRET: 'whsec_standin0123456789',
      STRIPE_API_BASE: stripe.base,
    },
  });
  acme = await cs.workspace({ name: 'Billed', adminEmail: 'payer@acme.test', adminName: 'Pat' });
  ws = acme.id;
  page = await cs.page({ viewport: { width: 1280, height: 900 }, signedIn: acme.signedIn });
}, STEP);

afterAll(async () => {
  await cs?.close();
  await stripe?.close();
});

describe('console billing', () => {
  it(
    'the card: loading and error states, "Add a card" through Checkout in setup mode, then "Replace card"; no paid plan before',
    async () => {
      const section = page.locator('section', { has: page.getByRole('heading', { name: 'Card', exact: true }) });
      // A failed read shows the error with Retry; Retry shows the card section.
      const cardApi = `${cs.base}/console/api/billing/card`;
      await page.route(cardApi, (r) =>
        r.fulfill({
          status: 503,
          contentType: 'application/json',
          body: JSON.stringify({
            error: { code: 'unavailable', message: 'The service is unavailable; try again.', request_id: 'req_0' },
          }),
        }),
      );
      await openPage(page, acme.path('/settings/billing'), 'Billing', 'billing-card-error');
      await section.getByRole('alert').getByText('The service is unavailable; try again.').waitFor();
      await page.unroute(cardApi);
      await section.getByRole('button', { name: 'Retry' }).click();
      await section.getByText('No card yet: invoices are not charged, and a paid plan needs one.').waitFor();

      // Without a card, the move to Pro is refused with the server's message and changes nothing.
      await page.getByRole('button', { name: 'Change plan' }).click();
      const dialog = page.getByRole('dialog', { name: 'Change plan' });
      await dialog.getByRole('radio', { name: /^Pro — / }).check();
      await dialog.getByRole('button', { name: 'Confirm plan change' }).click();
      await dialog
        .getByRole('alert')
        .getByText(
          "Add a card on the billing page before moving to Pro: a paid plan is charged to the workspace's card.",
        )
        .waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect((await cs.services.billing.subscriptionOf(ws)).plan.id).toBe('free');

      // A checkout that cannot start says why under the button.
      const checkoutApi = `${cs.base}/console/api/billing/card/checkout`;
      await page.route(checkoutApi, (r) =>
        r.fulfill({
          status: 502,
          contentType: 'application/json',
          body: JSON.stringify({
            error: {
              code: 'payment_provider_error',
              message: 'Stripe could not be reached; try again.',
              request_id: 'req_1',
            },
          }),
        }),
      );
      await section.getByRole('button', { name: 'Add a card' }).click();
      await section.getByRole('alert').getByText('Stripe could not be reached; try again.').waitFor();
      await page.unroute(checkoutApi);

      // "Add a card": Stripe's hosted page (the stand-in's) for a Checkout Session in setup mode.
      const checkout = async (button: string, number: string) => {
        await section.getByRole('button', { name: button }).click();
        await page.waitForURL((u) => u.href.startsWith(`${stripe.base}/pay/cs_`));
        await page.getByRole('button', { name: 'Save card' }).waitFor();
        const sid = new URL(page.url()).pathname.split('/')[2] ?? '';
        const session = stripe.sessions.get(sid);
        expect(session).toMatchObject({ mode: 'setup', status: 'open' });
        expect(stripe.customers.get(session?.customer ?? '')?.metadata).toEqual({ workspace_id: ws });
        await page.getByLabel('Card number').fill(number);
        await page.getByRole('button', { name: 'Save card' }).click();
        // Back through the service's return to the billing page, which says so once.
        await page.waitForURL(`${cs.base}/console/w/${ws}/live/settings/billing?card=saved`);
        await page.getByRole('heading', { name: 'Billing', level: 1 }).waitFor();
        await section.getByRole('status').getByText('Card saved: invoices are charged to it.').waitFor();
      };
      await checkout('Add a card', CARDS.ok);
      await section.getByText('visa •••• 4242, expires 12/2034').waitFor();
      expect(await section.getByRole('button', { name: 'Replace card' }).isEnabled()).toBe(true);
      await expectAccessible(page, 'billing-card');
      await screenshot(page, 'billing-card');

      await checkout('Replace card', '5555555555554444');
      await section.getByText('visa •••• 4444, expires 12/2034').waitFor();
      expect((await cs.services.billing.card({ workspaceId: ws } as never))?.last4).toBe('4444');
    },
    STEP,
  );

  it(
    'an admin upgrades free → pro: the upcoming invoice shows the prorated line the server computed',
    async () => {
      await openPage(page, acme.path('/settings/billing'), 'Billing', 'billing-free');
      await page.getByRole('heading', { name: /^Plan: Free/ }).waitFor();
      const free = page.getByRole('table', { name: 'Lines of the upcoming invoice' });
      expect(await free.locator('tr[data-kind="base"] td').first().textContent()).toMatch(/^Free plan, /);
      expect(await free.locator('tfoot td').textContent()).toBe('$0.00');
      await page.getByText('No invoices yet.').waitFor();

      await page.getByRole('button', { name: 'Change plan' }).click();
      const dialog = page.getByRole('dialog', { name: 'Change plan' });
      await dialog.getByRole('radio', { name: /^Pro — \$49\.00 a month/ }).check();
      await dialog.getByText(/^Upgrade now: Pro applies at once/).waitFor();
      await expectAccessible(page, 'billing-change-dialog');
      const before = Date.now();
      await dialog.getByRole('button', { name: 'Confirm plan change' }).click();
      const done = page.getByRole('dialog', { name: 'Plan changed' });
      await done.getByRole('status').waitFor();
      const after = Date.now();

      // What the server stored for the upgrade, read from the same database.
      const sub = await cs.services.billing.subscriptionOf(ws);
      expect(sub.plan.id).toBe('pro');
      const line = sub.upcoming_invoice.lines.find((l) => l.kind === 'proration');
      expect(line).toBeDefined();
      const cents = line?.amount_cents ?? -1;
      // The $49 difference prorated by the seconds left when the click reached the server.
      const start = Date.parse(sub.current_period.start);
      const end = Date.parse(sub.current_period.end);
      const share = (t: number) => (4_900 * (end - t)) / (end - start);
      expect(cents).toBeGreaterThanOrEqual(Math.floor(share(after + 1_000)));
      expect(cents).toBeLessThanOrEqual(Math.ceil(share(before)));
      expect(line?.description).toMatch(/Pro/);
      expect(await done.getByRole('status').textContent()).toBe(
        `Now on pro. ${money(cents)} for the rest of this period is on the upcoming invoice.`,
      );
      await done.getByRole('button', { name: 'Done' }).click();

      await page.getByRole('heading', { name: /^Plan: Pro/ }).waitFor();
      const upcoming = page.getByRole('table', { name: 'Lines of the upcoming invoice' });
      const row = upcoming.locator('tr[data-kind="proration"]');
      await row.waitFor();
      expect(await row.locator('td').nth(0).textContent()).toBe(line?.description);
      expect(await row.locator('td').nth(3).textContent()).toBe(money(cents));
      expect(await upcoming.locator('tfoot td').textContent()).toBe(money(sub.upcoming_invoice.total_cents));
      await expectAccessible(page, 'billing-pro');
      await screenshot(page, 'billing-pro');
    },
    STEP,
  );

  it(
    'a downgrade over the lower plan limits shows the 409 and changes nothing',
    async () => {
      for (let i = 0; i < 3; i++)
        await acme.v1('POST', '/webhooks', { url: `http://127.0.0.1:9/h${i}`, events: ['*'] });
      await page.getByRole('button', { name: 'Change plan' }).click();
      const dialog = page.getByRole('dialog', { name: 'Change plan' });
      await dialog.getByRole('radio', { name: /^Free — / }).check();
      await dialog.getByText(/^Downgrade at the end of this period/).waitFor();
      await dialog.getByRole('button', { name: 'Confirm plan change' }).click();
      await dialog
        .getByRole('alert')
        .getByText('Cannot move to Free: webhooks: 3 in the live environment, Free allows 2. Delete the excess first.')
        .waitFor();
      await dialog.getByText('Nothing was changed.').waitFor();
      await expectAccessible(page, 'billing-downgrade-blocked');
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect((await cs.services.billing.subscriptionOf(ws)).pending_change).toBeNull();
    },
    STEP,
  );

  it(
    'a finalized invoice is in the history with its lines and prints as a clean page',
    async () => {
      // A worker whose clock is past the period's end (+ 1 h) finalizes it, on the same database.
      const sub = await cs.services.billing.subscriptionOf(ws);
      const later = Date.parse(sub.current_period.end) + 61 * 60_000;
      const config = loadConfig(
        {},
        {
          SECRETS_KEY: process.env.SECRETS_KEY || undefined,
          DATABASE_URL: cs.storage.url,
          PUBLIC_URL: cs.base,
          LOG_LEVEL: 'silent',
        },
      );
      const future = createServices({ storage: cs.storage, clock: { now: () => later }, config });
      expect(await future.billing.finalizeDue(future.uow.as(systemActor('scheduler:billing-invoices')))).toBe(1);
      const invoice = (await cs.services.billing.invoicesOf(ws, { limit: 5, offset: 0, afterId: null })).items[0];
      expect(invoice?.total_cents).toBe(sub.upcoming_invoice.total_cents);

      await openPage(page, acme.path('/settings/billing'), 'Billing', 'billing-history');
      const item = page.locator('details.invoice-item', { hasText: 'INV-1' });
      await item.locator('summary').click();
      expect(await item.getByRole('table', { name: 'Lines of invoice INV-1' }).locator('tfoot td').textContent()).toBe(
        money(invoice?.total_cents ?? -1),
      );
      await item.getByRole('link', { name: 'Printable invoice INV-1' }).click();
      await page.getByRole('heading', { name: 'Invoice INV-1' }).waitFor();
      await page.getByText(invoice?.id ?? 'missing').waitFor();
      await expectAccessible(page, 'invoice-page');
      await screenshot(page, 'invoice-page');
      // On paper only the invoice shows: no navigation, no buttons.
      await page.emulateMedia({ media: 'print' });
      expect(await page.getByRole('heading', { name: 'Invoice INV-1' }).isVisible()).toBe(true);
      expect(await page.getByRole('link', { name: 'Billing', exact: true }).first().isVisible()).toBe(false);
      expect(await page.getByRole('button', { name: 'Print' }).isVisible()).toBe(false);
      await screenshot(page, 'invoice-print');
      await page.emulateMedia({ media: 'screen' });
    },
    STEP,
  );

  it(
    'a member sees that billing is for admins',
    async () => {
      const member = await cs.services.members.invite(asCli(cs.services), ws, {
        email: 'member@acme.test',
        role: 'member',
      });
      const p = await cs.page({ signedIn: await signedInState(cs.base, member.invite_url) });
      await openPage(p, acme.path('/settings/billing'), 'Billing', 'billing-member');
      await p.getByText('Only admins of this workspace can see and change its plan and invoices.').waitFor();
      expect(await p.getByRole('button', { name: 'Change plan' }).count()).toBe(0);
    },
    STEP,
  );
});
