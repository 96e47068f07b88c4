import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect, inject } from 'vitest';
import { CHROMIUM_ARGS, chromiumPath } from './chromium.js';

/** A Chromium of this test file's own (most files want {@link workerChromium}). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS });
}

/**
 * This worker's Chromium, shared with the other browser files the worker runs (launched by
 * test/chromium-broker.ts the first time the worker asks); `close()` disconnects and closes this
 * connection's contexts, the browser stays for the next file. Outside a Vitest run with the
 * broker, a Chromium of the file's own.
 */
export async function workerChromium(): Promise<Browser> {
  const broker = inject('chromiumBroker');
  if (!broker) return launchChromium();
  const res = await fetch(`${broker}/${process.env.VITEST_POOL_ID ?? '0'}`);
  const endpoint = await res.text();
  if (!res.ok) throw new Error(`Chromium did not start: ${endpoint}`);
  return chromium.connect(endpoint);
}

/** A free loopback port (for a server that must know its public URL before it starts). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** Where the journeys leave a screenshot of every page (kept by CI with its report in .tmp/). */
export const SCREENSHOT_DIR = join('.tmp', 'screenshots', 'console', process.env.WSVC_TEST_PROJECT || 'sqlite');

export async function screenshot(page: Page, name: string, alsoTo?: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
  if (alsoTo) await page.screenshot({ path: alsoTo });
}

/** axe-core's script (axe-core's documented `source`), loaded into a page once per document. */
const AXE_SOURCE = (createRequire(import.meta.url)('axe-core') as { source: string }).source;
const AXE_OPTIONS = {
  runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
  // Only violations are read: axe then keeps no nodes for the passes and the rules that do not apply.
  resultTypes: ['violations'],
};

/**
 * axe-core on the page: no serious or critical violation (docs/console.md). axe runs in the page
 * itself through its own API (`axe.run`), loaded once per document: @axe-core/playwright's
 * AxeBuilder opens another page in the context for every run, loads axe (564 kB) there and in the
 * page, twice in its single-page mode, and moves every result to it to merge frames the console does
 * not have; that made axe nearly two thirds of each page's time in the screens files
 * (docs/testing.md#where-the-time-goes).
 */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async (options) => {
    const axe = (window as unknown as { axe: AxeApi }).axe;
    const result = await axe.run(document, options);
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      targets: v.nodes.map((n) => n.target.join(' ')),
    }));
  }, AXE_OPTIONS);
  const bad = violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${name}: ${v.id} (${v.impact}) ${v.help} — ${v.targets.join(', ')}`);
  expect(bad).toEqual([]);
}

/** The part of axe-core's API used here (the page's `window.axe`). */
interface AxeApi {
  run(
    context: Document,
    options: unknown,
  ): Promise<{
    violations: { id: string; impact?: string | null; help: string; nodes: { target: string[] }[] }[];
  }>;
}

export function consoleBuilt(): boolean {
  return existsSync(join('dist', 'console', 'index.html'));
}
