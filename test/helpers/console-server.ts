import { type Browser, type BrowserContext, type BrowserContextOptions, type Page, request } from 'playwright-core';
import { expect } from 'vitest';
import { type Config, secretsKeys } from '../../src/config.js';
import type { Storage } from '../../src/db/database.js';
import { newId } from '../../src/kernel/ids.js';
import { createSealer } from '../../src/lib/sealed.js';
import { urlAt } from '../../src/modules/integrations/integrations.repository.js';
import type { Services } from '../../src/services.js';
import { asCli } from './app.js';
import { consoleBuilt, expectAccessible, workerChromium } from './browser.js';
import { PASSWORD } from './console.js';
import { type Served, type ServedOptions, startServed } from './served.js';

/** A signed-in browser state (its session cookie), for `storageState` of new contexts. */
export type SignedIn = Awaited<ReturnType<BrowserContext['storageState']>>;

/** A workspace made for a console test, its admin signed in once through the console API. */
export interface ConsoleWorkspace {
  id: string;
  adminEmail: string;
  liveKey: string;
  /** The admin's session: pass it to {@link ConsoleServer.page} instead of signing in again. */
  signedIn: SignedIn;
  /** `/console/w/<id>/<env><rest>` on the server. */
  path(rest: string, env?: 'live' | 'test'): string;
  /** A /v1 call with the admin's live key; fails the test on a non-2xx unless `ok` is false. */
  v1<T = { id: string }>(method: string, url: string, body?: unknown, ok?: boolean): Promise<{ data: T }>;
  /**
   * A connected Slack integration (live, resource.created and security), written to the database
   * directly: the server cannot resolve hooks.slack.com here (creation: test/integrations/).
   */
  connectSlack(): Promise<void>;
}

/** A real `wsvc serve` on a fresh database, with this worker's Chromium, for console journeys. */
export interface ConsoleServer {
  base: string;
  storage: Storage & { url: string; schema?: string };
  services: Services;
  config: Config;
  browser: Browser;
  /** Creates a workspace and signs its admin in through the console API (no page, no form). */
  workspace(opts: { name: string; adminEmail: string; adminName?: string }): Promise<ConsoleWorkspace>;
  /** A page in a new context (UTC, 1280×800 unless given), signed in when `signedIn` is; closed with the server. */
  page(opts?: BrowserContextOptions & { signedIn?: SignedIn }): Promise<Page>;
  close(): Promise<void>;
}

export type ConsoleServerOptions = ServedOptions;

export async function startConsoleServer(opts: ConsoleServerOptions = {}): Promise<ConsoleServer> {
  if (!consoleBuilt()) throw new Error('dist/console is missing: run `npm run build:console` first');
  // The server and the browser start together; when either fails, the other is closed.
  const [s, b] = await Promise.allSettled([startServed(opts), workerChromium()]);
  if (s.status === 'rejected' || b.status === 'rejected') {
    if (s.status === 'fulfilled') await s.value.close();
    if (b.status === 'fulfilled') await b.value.close();
    throw s.status === 'rejected' ? s.reason : (b as PromiseRejectedResult).reason;
  }
  const served: Served = s.value;
  const browser: Browser = b.value;
  const { base, storage, services, config } = served;
  const started = { served, browser };
  const contexts: BrowserContext[] = [];
  return {
    base,
    storage,
    services,
    config,
    browser,
    async workspace({ name, adminEmail, adminName }) {
      const out = await services.workspaces.create(asCli(services), { name, adminEmail, adminName });
      const liveKey = out.keys.live.key;
      return {
        id: out.workspace.id,
        adminEmail,
        liveKey,
        signedIn: await signedInState(base, out.set_password_url),
        path: (rest, env = 'live') => `${base}/console/w/${out.workspace.id}/${env}${rest}`,
        async v1<T>(method: string, url: string, body?: unknown, ok = true) {
          const res = await fetch(`${base}/v1${url}`, {
            method,
            headers: { authorization: `Bearer ${liveKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
            body: body ? JSON.stringify(body) : undefined,
          });
          if (ok) expect(res.status, await res.clone().text()).toBeLessThan(300);
          return (await res.json()) as { data: T };
        },
        async connectSlack() {
          const now = new Date().toISOString();
          const id = newId('integration');
          // Stored as the service stores it: sealed under the server's key (docs/settings.md#secrets-at-rest).
          const sealer = createSealer(secretsKeys(config).keys);
          await storage.db
            .insertInto('integrations')
            .values({
              id,
              workspace_id: out.workspace.id,
              kind: 'slack',
              url: sealer.seal('https://hooks.slack.com/services/T1/B1/secretpartAB12', urlAt(out.workspace.id, id)),
              env: 'live',
              events: JSON.stringify(['resource.created']),
              categories: JSON.stringify(['security']),
              status: 'enabled',
              created_at: now,
              updated_at: now,
            })
            .execute();
        },
      };
    },
    async page({ signedIn, ...options } = {}) {
      const ctx = await started.browser.newContext({
        viewport: { width: 1280, height: 800 },
        timezoneId: 'UTC',
        ...options,
        storageState: signedIn,
      });
      contexts.push(ctx);
      return ctx.newPage();
    },
    async close() {
      for (const ctx of contexts) await ctx.close().catch(() => undefined);
      await started.browser.close();
      await started.served.close();
    },
  };
}

/**
 * Sets a password from a single-use link and signs in through the console API, outside any page;
 * returns the session as a `storageState` (one scrypt hash and one check, once per person).
 */
export async function signedInState(base: string, link: string): Promise<SignedIn> {
  const api = await request.newContext({ baseURL: base, extraHTTPHeaders: { origin: base } });
  try {
    await signInRequests(api, base, link);
    return await api.storageState();
  } finally {
    await api.dispose();
  }
}

/** Sets a password from a single-use link and signs the context in (its pages share the cookie). */
export async function signInContext(ctx: BrowserContext, base: string, link: string): Promise<void> {
  await signInRequests(ctx.request, base, link);
}

async function signInRequests(api: BrowserContext['request'], base: string, link: string): Promise<void> {
  const token = new URL(link).searchParams.get('token') ?? '';
  const set = await api.post(`${base}/console/api/password/set`, {
    headers: { origin: base },
    data: { token, password: PASSWORD },
  });
  expect(set.status(), await set.text()).toBe(200);
  const email = ((await set.json()) as { data: { email: string } }).data.email;
  const session = await api.post(`${base}/console/api/session`, {
    headers: { origin: base },
    data: { email, password: PASSWORD },
  });
  expect(session.status(), await session.text()).toBe(201);
}

/**
 * Waits until the page shows no loading state of its own (`.state-loading`, console/src/ui/states.tsx):
 * every one that is there now, and any that replaced it.
 */
export async function loaded(p: Page): Promise<void> {
  const loading = p.locator('.state-loading');
  while ((await loading.count()) > 0) await loading.first().waitFor({ state: 'detached' });
}

/** Opens a page, waits for its heading and for its loading states to end, and checks it with axe. */
export async function openPage(p: Page, url: string, heading: string, name: string): Promise<void> {
  await p.goto(url);
  await p.getByRole('heading', { name: heading, exact: true }).waitFor();
  await loaded(p);
  await expectAccessible(p, name);
}

/** Nothing wider than the window: the page never scrolls sideways (the message names the widest elements). */
export async function expectNoHorizontalOverflow(p: Page, name: string): Promise<void> {
  const { scroll, inner, widest } = await p.evaluate(() => {
    const inner = window.innerWidth;
    const widest = [...document.querySelectorAll('body *')]
      .map((e) => ({ e, right: e.getBoundingClientRect().right }))
      .filter((x) => x.right > inner && !x.e.closest('.table-wrap'))
      .slice(0, 5)
      .map((x) => `${x.e.tagName.toLowerCase()}.${x.e.className} → ${Math.round(x.right)}`);
    return { scroll: document.documentElement.scrollWidth, inner, widest };
  });
  expect(scroll, `${name}: ${scroll} px wide in a ${inner} px window: ${widest.join('; ')}`).toBeLessThanOrEqual(inner);
}
