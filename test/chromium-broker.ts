import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type BrowserServer, chromium } from 'playwright-core';
import type { TestProject } from 'vitest/node';
import { CHROMIUM_ARGS, chromiumPath, featuresLeftOn } from './helpers/chromium.js';

declare module 'vitest' {
  interface ProvidedContext {
    /** test/chromium-broker.ts: where a worker asks for its Chromium (`GET /<VITEST_POOL_ID>`). */
    chromiumBroker: string;
  }
}

const STARTED = Symbol.for('wsvc.chromiumBroker');

/**
 * One Chromium per worker (docs/testing.md#shared-set-up): the browser files of a run share the
 * Chromium of the worker that runs them, instead of launching one each. A loopback server of the
 * main process launches a worker's Chromium the first time that worker asks (so a run without
 * browser files launches none) and answers its WebSocket endpoint; test/helpers/browser.ts
 * connects to it. Every Chromium is closed when the run ends.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  // Each project loads this module afresh: one broker for the run, provided through the root project.
  const g = globalThis as { [STARTED]?: boolean };
  if (g[STARTED]) return undefined;
  g[STARTED] = true;
  const browsers = new Map<string, Promise<BrowserServer>>();
  const server = createServer((req, res) => {
    const pool = (req.url ?? '/').slice(1) || '0';
    let launched = browsers.get(pool);
    if (!launched) {
      // A missing chromium fails the browser files with its message (a throw here would end the whole run).
      launched = Promise.resolve()
        .then(() => chromium.launchServer({ executablePath: chromiumPath(), headless: true, args: CHROMIUM_ARGS }))
        .then(async (server) => {
          const left = featuresLeftOn(server.process().spawnargs);
          if (left.length === 0) return server;
          await server.close();
          throw new Error(
            `Playwright turns off ${left.join(', ')} too: add them to PLAYWRIGHT_DISABLED_FEATURES in test/helpers/chromium.ts (Chromium reads only the last --disable-features)`,
          );
        });
      browsers.set(pool, launched);
    }
    launched.then(
      (b) => res.end(b.wsEndpoint()),
      (e: Error) => {
        browsers.delete(pool);
        res.writeHead(500).end(e.message);
      },
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  project.vitest
    .getRootProject()
    .provide('chromiumBroker', `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return async () => {
    server.close();
    await Promise.all([...browsers.values()].map((b) => b.then((s) => s.close()).catch(() => undefined)));
  };
}
