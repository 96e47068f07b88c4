import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemActor } from '../../src/kernel/principal.js';
import { createServices } from '../../src/services.js';
import { expectAccessible, SCREENSHOT_DIR } from '../helpers/browser.js';
import {
  type ConsoleServer,
  type ConsoleWorkspace,
  expectNoHorizontalOverflow,
  loaded,
  openPage,
  type SignedIn,
  startConsoleServer,
} from '../helpers/console-server.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';

// Backends: sqlite — every page of the console bundle at two sizes and in two schemes
// Tier: full — drives Chromium
// Every page of the console's router, with realistic data, at 1280×800 and 390×844, in light and
// dark: no sideways scrolling, axe clean, and a screenshot of each under
// .tmp/screenshots/console/<backend>/<page>-<1280|390>-<light|dark>.png. With UPDATE_DOC_IMAGES=1
// (SQLite project) the README's images in docs/images are rewritten from the same pages.
const STEP = 240_000;
const VIEWPORTS = { 1280: { width: 1280, height: 800 }, 390: { width: 390, height: 844 } } as const;
const SCHEMES = ['light', 'dark'] as const;

let cs: ConsoleServer;
let acme: ConsoleWorkspace;
let receiver: Receiver;
let ws: string;
let resourceId: string;
let okHook: string;
let downHook: string;
let failedDelivery: string;
let eventId: string;
let invoiceId: string;
let inviteLink: string;
let signedIn: SignedIn;

beforeAll(async () => {
  receiver = await startReceiver((r) =>
    r.path === '/down' ? { status: 503, body: 'maintenance' } : { status: 200, body: 'thanks' },
  );
  cs = await startConsoleServer({ env: { USAGE_FLUSH_MS: '200' } });
  acme = await cs.workspace({ name: 'Acme Robotics', adminEmail: 'ada@acme.test', adminName: 'Ada Lovelace' });
  ws = acme.id;
  await acme.v1('PATCH', '/users/me', { timezone: 'Europe/Berlin' });
  for (const name of ['Deploy bot', 'Billing sync', 'Analytics export'])
    await acme.v1('POST', '/keys', { name, env: 'live' });
  okHook = (
    await acme.v1('POST', '/webhooks', {
      url: receiver.url('/ok'),
      events: ['resource.created', 'resource.updated'],
      label: 'Order sync',
    })
  ).data.id;
  downHook = (await acme.v1('POST', '/webhooks', { url: receiver.url('/down'), events: ['*'], label: 'Warehouse' }))
    .data.id;
  const names = ['Invoice 2026-0042', 'Customer Globex', 'Shipment 7781', 'Contract renewal Q1', 'Robot arm R2'];
  const ids: string[] = [];
  for (const [i, name] of names.entries()) {
    ids.push(
      (
        await acme.v1('POST', '/resources', {
          name,
          type: (['standard', 'premium'] as const)[i % 2],
          metadata: { n: String(i) },
        })
      ).data.id,
    );
  }
  resourceId = ids[0] as string;
  await acme.v1('PUT', `/resources/${resourceId}`, { name: 'Invoice 2026-0042 (paid)', metadata: { n: '0' } });
  // A few failed requests for the usage pages.
  await acme.v1('GET', '/resources/res_missing', undefined, false);
  await acme.v1('POST', '/resources', { name: '' }, false);
  inviteLink = (await cs.services.members.invite(ws, { email: 'grace@acme.test', role: 'member' })).invite_url;
  await cs.services.members.invite(ws, { email: 'linus@acme.test', role: 'viewer' });
  // Every delivery answered: 6 to Order sync (succeeded), 6 to Warehouse (failed, no retries).
  type Row = { id: string; event_id: string };
  const rows = await eventually(async () => {
    const list = (await acme.v1('GET', `/webhooks/${downHook}/deliveries?status=failed&limit=50`)) as unknown as {
      data: Row[];
    };
    return list.data.length >= 6 && list.data;
  }, 30_000);
  failedDelivery = rows[0]?.id as string;
  eventId = rows[0]?.event_id as string;
  await eventually(async () => {
    const list = (await acme.v1('GET', `/webhooks/${okHook}/deliveries?status=succeeded&limit=50`)) as unknown as {
      data: Row[];
    };
    return list.data.length >= 6;
  }, 30_000);
  // A Slack integration (written directly: the server cannot resolve hooks.slack.com here).
  await acme.connectSlack();

  // Signed in once (cs.workspace); every context starts from this cookie.
  signedIn = acme.signedIn;
  const ctx = await cs.browser.newContext({ storageState: signedIn });
  // Pro plan, then a worker whose clock is past the period's end finalizes the first invoice.
  const session = await ctx.request.get(`${cs.base}/console/api/session`);
  const csrf = ((await session.json()) as { data: { csrf_token: string } }).data.csrf_token;
  const plan = await ctx.request.post(`${cs.base}/console/api/billing/plan`, {
    headers: { origin: cs.base, 'x-csrf-token': csrf, 'x-workspace-id': ws },
    data: { plan: 'pro' },
  });
  expect(plan.status(), await plan.text()).toBe(200);
  const sub = await cs.services.billing.subscriptionOf(ws);
  const later = Date.parse(sub.current_period.end) + 61 * 60_000;
  const config = loadConfig({}, { DATABASE_URL: cs.storage.url, PUBLIC_URL: cs.base, LOG_LEVEL: 'silent' });
  const future = createServices({ storage: cs.storage, clock: { now: () => later }, config });
  expect(await future.billing.finalizeDue(systemActor('scheduler:billing-invoices'))).toBe(1);
  invoiceId = (await cs.services.billing.invoicesOf(ws, { limit: 5, offset: 0, afterId: null })).items[0]?.id as string;
  await ctx.close();
}, STEP);

afterAll(async () => {
  await cs?.close();
  await receiver?.close();
});

interface Screen {
  name: string;
  url: () => string;
  heading: string;
  signedOut?: boolean;
  /** After the heading: what makes the page show what it is for (open a row, wait for data). */
  ready?: (p: Page) => Promise<void>;
  /** Written to docs/images/<doc>.png (1280, light) with UPDATE_DOC_IMAGES=1. */
  doc?: string;
}

const at = (rest: string) => () => `${cs.base}/console/w/${ws}/live${rest}`;

/** Every route of console/src/app.tsx, with the state a person looks at. */
function screens(): Screen[] {
  return [
    { name: 'sign-in', url: () => `${cs.base}/console/sign-in`, heading: 'Sign in', signedOut: true },
    {
      name: 'forgot-password',
      url: () => `${cs.base}/console/forgot-password`,
      heading: 'Forgot your password',
      signedOut: true,
    },
    {
      name: 'set-password',
      url: () => inviteLink,
      heading: 'Set your password',
      signedOut: true,
      ready: (p) => p.getByText('grace@acme.test').first().waitFor(),
    },
    {
      name: 'overview',
      url: at('/overview'),
      heading: 'Overview',
      doc: 'console-overview',
      ready: (p) => p.getByRole('heading', { name: 'Recent events' }).waitFor(),
    },
    {
      name: 'resources',
      url: at('/resources'),
      heading: 'Resources',
      ready: (p) => p.getByText('Robot arm R2').waitFor(),
    },
    { name: 'resource-detail', url: () => at(`/resources/${resourceId}`)(), heading: 'Invoice 2026-0042 (paid)' },
    { name: 'events', url: at('/events'), heading: 'Events', ready: (p) => p.getByText(eventId).waitFor() },
    {
      name: 'event-detail',
      url: at('/events'),
      heading: 'Events',
      ready: async (p) => {
        await p.getByRole('button', { name: 'Show payload' }).first().click();
        await p.locator('pre.code').first().waitFor();
        // The payload opens across the table's whole width, under its row (not in the Payload column).
        const [pre, table] = await Promise.all([
          p.locator('pre.code').first().boundingBox(),
          p.getByRole('table', { name: 'Events' }).boundingBox(),
        ]);
        expect(pre?.width ?? 0).toBeGreaterThan((table?.width ?? 0) * 0.8);
      },
    },
    {
      name: 'webhooks',
      url: at('/webhooks'),
      heading: 'Webhooks',
      ready: (p) => p.getByText('Warehouse').first().waitFor(),
    },
    {
      name: 'webhook-detail',
      url: () => at(`/webhooks/${downHook}`)(),
      heading: 'Warehouse',
      doc: 'console-delivery-log',
      ready: (p) => p.getByRole('table', { name: 'Deliveries' }).getByText('failed').first().waitFor(),
    },
    {
      name: 'delivery-detail',
      url: () => at(`/webhooks/${downHook}?delivery=${failedDelivery}`)(),
      heading: 'Warehouse',
      ready: (p) => p.getByText('Attempt 1').first().waitFor(),
    },
    { name: 'usage', url: at('/usage'), heading: 'Usage' },
    { name: 'usage-requests', url: at('/usage/requests'), heading: 'Failed requests' },
    {
      name: 'notifications',
      url: at('/notifications'),
      heading: 'Notifications',
      doc: 'console-notifications',
      ready: (p) => p.getByRole('list', { name: 'Notifications' }).waitFor(),
    },
    {
      name: 'keys',
      url: at('/settings/keys'),
      heading: 'API Keys',
      doc: 'console-keys',
      ready: (p) => p.getByText('Analytics export').first().waitFor(),
    },
    {
      name: 'members',
      url: at('/settings/members'),
      heading: 'Members',
      ready: (p) => p.getByText('linus@acme.test').first().waitFor(),
    },
    { name: 'profile', url: at('/settings/profile'), heading: 'Profile' },
    {
      name: 'billing',
      url: at('/settings/billing'),
      heading: 'Billing',
      doc: 'console-billing',
      ready: (p) => p.getByRole('heading', { name: /^Plan: Pro/ }).waitFor(),
    },
    {
      name: 'invoice',
      url: () => at(`/settings/billing/invoices/${invoiceId}`)(),
      heading: 'Invoice INV-1',
    },
    {
      name: 'integrations',
      url: at('/settings/integrations'),
      heading: 'Integrations',
      doc: 'console-integrations',
      ready: (p) => p.getByRole('table', { name: 'Integrations' }).waitFor(),
    },
    {
      name: 'security',
      url: at('/settings/security'),
      heading: 'Sign-in security',
      ready: (p) => p.getByRole('button', { name: 'Save single sign-on' }).waitFor(),
    },
    {
      name: 'audit-log',
      url: at('/settings/audit-log'),
      heading: 'Audit log',
      ready: (p) => p.getByRole('table', { name: 'Audit log' }).waitFor(),
    },
    {
      // The provider's answer with a state this server never made: the refusal and the way back.
      name: 'sso-callback',
      url: () => `${cs.base}/console/sso/callback?state=unknown&code=unknown`,
      heading: 'Single sign-on',
      signedOut: true,
      ready: (p) => p.getByRole('alert').waitFor(),
    },
    // The enrolment page (/two-factor-setup) needs a session held by the second-factor policy:
    // test/console/team-sign-in.test.ts checks it at 390 px in dark.
    { name: 'not-found', url: at('/no-such-page'), heading: 'Page not found' },
  ];
}

function docImage(doc: string | undefined, width: number, scheme: string): string | undefined {
  if (!doc || process.env.UPDATE_DOC_IMAGES !== '1' || process.env.WSVC_TEST_PROJECT === 'postgres') return undefined;
  mkdirSync('docs/images', { recursive: true });
  if (width === 1280 && scheme === 'light') return `docs/images/${doc}.png`;
  // One page also in dark and on a phone for the README.
  if (doc === 'console-delivery-log' && width === 1280 && scheme === 'dark') return 'docs/images/console-dark.png';
  if (doc === 'console-overview' && width === 390 && scheme === 'light') return 'docs/images/console-phone.png';
  return undefined;
}

describe('every console page at 1280×800 and 390×844, light and dark', () => {
  for (const width of [1280, 390] as const) {
    for (const scheme of SCHEMES) {
      it(
        `${width} px, ${scheme}: no sideways scrolling, axe clean, a screenshot of each`,
        async () => {
          mkdirSync(SCREENSHOT_DIR, { recursive: true });
          const signedInCtx = await cs.browser.newContext({
            viewport: VIEWPORTS[width],
            colorScheme: scheme,
            timezoneId: 'UTC',
            storageState: signedIn,
          });
          const signedOutCtx = await cs.browser.newContext({ viewport: VIEWPORTS[width], colorScheme: scheme });
          try {
            const inPage = await signedInCtx.newPage();
            const outPage = await signedOutCtx.newPage();
            for (const s of screens()) {
              const p = s.signedOut ? outPage : inPage;
              const name = `${s.name}-${width}-${scheme}`;
              await p.goto(s.url());
              await p.getByRole('heading', { name: s.heading, exact: true }).waitFor();
              // Every loading state (ui/states.tsx) gone.
              await loaded(p);
              if (s.ready) await s.ready(p);
              await expectAccessible(p, name);
              // The page's own background follows the scheme (dark mode is not only the system's widgets).
              const bg = await p.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
              expect(bg, name).toBe(scheme === 'dark' ? 'rgb(13, 17, 23)' : 'rgb(246, 247, 249)');
              await expectNoHorizontalOverflow(p, name);
              await p.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
              const doc = docImage(s.doc, width, scheme);
              if (doc) await p.screenshot({ path: doc });
            }
          } finally {
            await signedInCtx.close();
            await signedOutCtx.close();
          }
        },
        STEP,
      );
    }
  }

  it(
    "the in-app Theme choice flips a light system's page to dark and back",
    async () => {
      const p = await cs.page({ viewport: VIEWPORTS[1280], colorScheme: 'light', signedIn });
      const bg = () => p.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
      await openPage(p, at('/overview')(), 'Overview', 'theme-light');
      expect(await bg()).toBe('rgb(246, 247, 249)');
      await p.getByLabel('Theme').selectOption('dark');
      expect(await bg()).toBe('rgb(13, 17, 23)');
      await expectAccessible(p, 'theme-dark-chosen');
      await p.getByLabel('Theme').selectOption('system');
      expect(await bg()).toBe('rgb(246, 247, 249)');
    },
    STEP,
  );
});
