import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import { type Config, loadConfig } from '../../src/config.js';
import type { Storage } from '../../src/db/database.js';
import { type Clock, systemClock } from '../../src/lib/clock.js';
import { createServices, type Services } from '../../src/services.js';
import { consoleBuilt, expectAccessible, freePort, launchChromium } from './browser.js';
import { PASSWORD } from './console.js';
import { databaseUrlOf, startWsvc, stopProcess, type WsvcProcess } from './processes.js';
import { openTestStorage } from './storage.js';

/** A real `wsvc serve` on a fresh database, with Chromium, for console journeys. */
export interface ConsoleServer {
  base: string;
  storage: Storage & { url: string; schema?: string };
  services: Services;
  config: Config;
  browser: Browser;
  close(): Promise<void>;
}

/**
 * Options: `apiOnly` runs `wsvc serve --api-only` (no delivery worker, no jobs: the test drives the
 * in-process `services.delivery` and jobs itself); `clock` is the in-process services' clock (the
 * server keeps the system's); `env` adds settings to both the server and the in-process config.
 */
export interface ConsoleServerOptions {
  apiOnly?: boolean;
  clock?: Clock;
  env?: Record<string, string>;
  /** The host name of PUBLIC_URL and of `base` (default 127.0.0.1): passkeys need a domain name such as localhost. */
  host?: string;
}

export async function startConsoleServer(opts: ConsoleServerOptions = {}): Promise<ConsoleServer> {
  if (!consoleBuilt()) throw new Error('dist/console is missing: run `npm run build:console` first');
  const storage = await openTestStorage();
  const port = await freePort();
  const base = `http://${opts.host ?? '127.0.0.1'}:${port}`;
  const config = loadConfig(
    {},
    { DATABASE_URL: storage.url, PUBLIC_URL: base, LOG_LEVEL: 'silent', PLAN_LIMITS: 'off', ...opts.env },
  );
  const services = createServices({ storage, clock: opts.clock ?? systemClock, config });
  let server: WsvcProcess | undefined;
  let browser: Browser | undefined;
  try {
    server = await startWsvc(opts.apiOnly ? ['serve', '--api-only'] : ['serve'], {
      DATABASE_URL: databaseUrlOf(storage),
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: base,
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
      WEBHOOK_MAX_RETRIES: '0',
      WEBHOOK_POLL_MS: '100',
      REDIS_URL: process.env.TEST_REDIS_URL || '',
      ...opts.env,
    });
    browser = await launchChromium();
  } catch (e) {
    if (server) await stopProcess(server.child);
    await storage.close();
    throw e;
  }
  const started = { server, browser };
  return {
    base,
    storage,
    services,
    config,
    browser,
    async close() {
      await started.browser.close();
      await stopProcess(started.server.child);
      await storage.close();
    },
  };
}

/** Sets a password from a single-use link and signs the context in (its pages share the cookie). */
export async function signInContext(ctx: BrowserContext, base: string, link: string): Promise<void> {
  const token = new URL(link).searchParams.get('token') ?? '';
  const set = await ctx.request.post(`${base}/console/api/password/set`, {
    headers: { origin: base },
    data: { token, password: PASSWORD },
  });
  expect(set.status(), await set.text()).toBe(200);
  const email = ((await set.json()) as { data: { email: string } }).data.email;
  const session = await ctx.request.post(`${base}/console/api/session`, {
    headers: { origin: base },
    data: { email, password: PASSWORD },
  });
  expect(session.status(), await session.text()).toBe(201);
}

/** Opens a page, waits for its heading and for every "Loading…" to end, and checks it with axe. */
export async function openPage(p: Page, url: string, heading: string, name: string): Promise<void> {
  await p.goto(url);
  await p.getByRole('heading', { name: heading, exact: true }).waitFor();
  await p
    .getByText(/…$/)
    .first()
    .waitFor({ state: 'detached', timeout: 10_000 })
    .catch(() => undefined);
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
