import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemActor } from '../../src/kernel/principal.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { expectAccessible, SCREENSHOT_DIR } from '../helpers/browser.js';
import {
  type ConsoleServer,
  type ConsoleWorkspace,
  expectNoHorizontalOverflow,
  loaded,
  startConsoleServer,
} from '../helpers/console-server.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';

// The pages of the console's router with realistic data, at 1280×800 and 390×844, in light and dark:
// no sideways scrolling, axe clean, the page's own background following the scheme, Sign out on
// screen when signed in, and a screenshot of each under .tmp/screenshots/console/<backend>/<page>-<1280|390>-<light|dark>.png.
// The pages are split by group over several files (test/console/screens-*.test.ts) so that the
// workers share them; each file seeds only the data its pages show, and reaches each page by its
// URL in a context that starts signed in (a `storageState`). With UPDATE_DOC_IMAGES=1 the README's
// images in docs/images are rewritten from the same pages.

export const STEP = 240_000;
export const VIEWPORTS = { 1280: { width: 1280, height: 800 }, 390: { width: 390, height: 844 } } as const;
export const SCHEMES = ['light', 'dark'] as const;
export const BACKGROUND = { light: 'rgb(246, 247, 249)', dark: 'rgb(13, 17, 23)' } as const;

/** What a group's pages need beyond a workspace with its admin signed in. */
export interface SeedNeeds {
  /** Three keys, two members invited (one link kept), two webhooks whose six deliveries each succeeded and failed. */
  webhooks?: boolean;
  /** Five resources, one updated; two failed requests for the usage pages. */
  resources?: boolean;
  /** The Pro plan and its first invoice, finalized by a worker whose clock is past the period's end. */
  billing?: boolean;
  /** A Slack integration. */
  slack?: boolean;
}

export interface Seeded {
  cs: ConsoleServer;
  acme: ConsoleWorkspace;
  ws: string;
  resourceId: string;
  downHook: string;
  failedDelivery: string;
  eventId: string;
  invoiceId: string;
  inviteLink: string;
  at(rest: string): string;
}

/** Starts a console server and seeds what `needs` asks for; `close` ends both. */
export async function seed(needs: SeedNeeds): Promise<Seeded & { close(): Promise<void> }> {
  let receiver: Receiver | undefined;
  if (needs.webhooks) {
    receiver = await startReceiver((r) =>
      r.path.startsWith('/down') ? { status: 503, body: 'maintenance' } : { status: 200, body: 'thanks' },
    );
  }
  const cs = await startConsoleServer({ env: { USAGE_FLUSH_MS: '200' } });
  const acme = await cs.workspace({ name: 'Acme Robotics', adminEmail: 'ada@acme.test', adminName: 'Ada Lovelace' });
  const ws = acme.id;
  const out: Seeded = {
    cs,
    acme,
    ws,
    resourceId: '',
    downHook: '',
    failedDelivery: '',
    eventId: '',
    invoiceId: '',
    inviteLink: '',
    at: (rest) => `${cs.base}/console/w/${ws}/live${rest}`,
  };
  await acme.v1('PATCH', '/users/me', { timezone: 'Europe/Berlin' });
  out.inviteLink = (
    await cs.services.members.invite(asCli(cs.services), ws, { email: 'grace@acme.test', role: 'member' })
  ).invite_url;
  await cs.services.members.invite(asCli(cs.services), ws, { email: 'linus@acme.test', role: 'viewer' });
  for (const name of ['Deploy bot', 'Billing sync', 'Analytics export'])
    await acme.v1('POST', '/keys', { name, env: 'live' });
  let okHook = '';
  if (needs.webhooks && receiver) {
    okHook = (
      await acme.v1('POST', '/webhooks', {
        url: receiver.url('/ok'),
        events: ['resource.created', 'resource.updated'],
        label: 'Order sync',
      })
    ).data.id;
    out.downHook =
      // A long URL: the lists and the endpoint's page must not scroll sideways on a phone.
      (
        await acme.v1('POST', '/webhooks', {
          url: receiver.url('/down/a-rather-long-path/of-the-warehouse/hook'),
          events: ['*'],
          label: 'Warehouse',
        })
      ).data.id;
  }
  if (needs.resources || needs.webhooks) {
    const names = [
      'Invoice 2026-0042',
      'Customer Globex',
      'Invoice with a rather long name 1',
      'Contract renewal Q1',
      'Robot arm R2',
    ];
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
    out.resourceId = ids[0] as string;
    await acme.v1('PUT', `/resources/${out.resourceId}`, { name: 'Invoice 2026-0042 (paid)', metadata: { n: '0' } });
    // A few failed requests for the usage pages.
    await acme.v1('GET', '/resources/res_missing', undefined, false);
    await acme.v1('POST', '/resources', { name: '' }, false);
  }
  if (needs.webhooks) {
    // Every delivery answered: 6 to Order sync (succeeded), 6 to Warehouse (failed, no retries).
    type Row = { id: string; event_id: string };
    const rows = await eventually(async () => {
      const list = (await acme.v1('GET', `/webhooks/${out.downHook}/deliveries?status=failed&limit=50`)) as unknown as {
        data: Row[];
      };
      return list.data.length >= 6 && list.data;
    }, 30_000);
    out.failedDelivery = rows[0]?.id as string;
    out.eventId = rows[0]?.event_id as string;
    await eventually(async () => {
      const list = (await acme.v1('GET', `/webhooks/${okHook}/deliveries?status=succeeded&limit=50`)) as unknown as {
        data: Row[];
      };
      return list.data.length >= 6;
    }, 30_000);
  }
  // A Slack integration (written directly: the server cannot resolve hooks.slack.com here).
  if (needs.slack) await acme.connectSlack();
  if (needs.billing) {
    const ctx = await cs.browser.newContext({ storageState: acme.signedIn });
    try {
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
      out.invoiceId = (await cs.services.billing.invoicesOf(ws, { limit: 5, offset: 0, afterId: null })).items[0]
        ?.id as string;
    } finally {
      await ctx.close();
    }
  }
  return {
    ...out,
    async close() {
      await cs.close();
      await receiver?.close();
    },
  };
}

export interface Screen {
  name: string;
  url: (s: Seeded) => string;
  heading: string;
  signedOut?: boolean;
  /** After the heading: what makes the page show what it is for (open a row, wait for data). */
  ready?: (p: Page, s: Seeded) => Promise<void>;
  /** Written to docs/images/<doc>.png (1280, light) with UPDATE_DOC_IMAGES=1. */
  doc?: string;
}

// WSVC_TEST_STEP_TIMES=1: each step's total time over the file's pages, printed when the file ends
// (what docs/testing.md's profile of a slow machine was measured with).
const stepTimes = new Map<string, { ms: number; n: number }>();
async function step<T>(name: string, fn: () => Promise<T>): Promise<T> {
  if (process.env.WSVC_TEST_STEP_TIMES !== '1') return fn();
  const started = performance.now();
  try {
    return await fn();
  } finally {
    const t = stepTimes.get(name) ?? { ms: 0, n: 0 };
    t.ms += performance.now() - started;
    t.n += 1;
    stepTimes.set(name, t);
  }
}
function printStepTimes(group: string): void {
  if (stepTimes.size === 0) return;
  const lines = [...stepTimes].map(([k, t]) => `  ${k.padEnd(10)} ${(t.ms / 1000).toFixed(1).padStart(7)} s in ${t.n}`);
  process.stderr.write(`step times, screens-${group}:\n${lines.join('\n')}\n`);
  stepTimes.clear();
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

/**
 * The checks of one group of pages: for each size and scheme a describe with two contexts (signed
 * in from the seeded session, and signed out) kept for its pages, and one test per page.
 */
export function describeScreens(group: string, needs: SeedNeeds, screens: Screen[]): { seeded: () => Seeded } {
  let seeded: (Seeded & { close(): Promise<void> }) | undefined;
  beforeAll(async () => {
    await step('seed', async () => {
      seeded = await seed(needs);
    });
  }, STEP);
  afterAll(async () => {
    await seeded?.close();
    printStepTimes(group);
  });
  const get = () => {
    if (!seeded) throw new Error('the screens were not seeded');
    return seeded;
  };
  describe(`the ${group} pages at 1280×800 and 390×844, light and dark`, () => {
    for (const width of [1280, 390] as const) {
      for (const scheme of SCHEMES) {
        describe(`${width} px, ${scheme}`, () => {
          let signedIn: BrowserContext | undefined;
          let signedOut: BrowserContext | undefined;
          let inPage: Page;
          let outPage: Page;
          beforeAll(async () => {
            const s = get();
            mkdirSync(SCREENSHOT_DIR, { recursive: true });
            signedIn = await s.cs.browser.newContext({
              viewport: VIEWPORTS[width],
              colorScheme: scheme,
              timezoneId: 'UTC',
              storageState: s.acme.signedIn,
            });
            signedOut = await s.cs.browser.newContext({ viewport: VIEWPORTS[width], colorScheme: scheme });
            inPage = await signedIn.newPage();
            outPage = await signedOut.newPage();
          }, STEP);
          afterAll(async () => {
            await signedIn?.close();
            await signedOut?.close();
          });
          for (const screen of screens) {
            it(
              `${screen.name}: no sideways scrolling, axe clean, its background, a screenshot`,
              async () => {
                const s = get();
                const p = screen.signedOut ? outPage : inPage;
                const name = `${screen.name}-${width}-${scheme}`;
                await step('goto', () => p.goto(screen.url(s)));
                await step('heading', () => p.getByRole('heading', { name: screen.heading, exact: true }).waitFor());
                // Every loading state (ui/states.tsx) gone.
                await step('loaded', () => loaded(p));
                if (screen.ready) await step('ready', () => (screen.ready as NonNullable<Screen['ready']>)(p, s));
                await step('axe', () => expectAccessible(p, name));
                // The page's own background follows the scheme (dark mode is not only the system's widgets).
                const bg = await p.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
                expect(bg, name).toBe(BACKGROUND[scheme]);
                await step('overflow', () => expectNoHorizontalOverflow(p, name));
                if (!screen.signedOut) {
                  // Sign out stays on screen, on a phone too (the navigation folds behind Menu: test/console/layout.test.ts).
                  const signOut = await p.getByRole('button', { name: 'Sign out' }).boundingBox();
                  expect(signOut, name).not.toBeNull();
                  expect((signOut?.x ?? 0) + (signOut?.width ?? 0), name).toBeLessThanOrEqual(VIEWPORTS[width].width);
                }
                await step('screenshot', () =>
                  p.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true }),
                );
                const doc = docImage(screen.doc, width, scheme);
                if (doc) await p.screenshot({ path: doc });
              },
              STEP,
            );
          }
        });
      }
    }
  });
  return { seeded: get };
}
