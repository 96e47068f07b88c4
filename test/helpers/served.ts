import { type Config, loadConfig } from '../../src/config.js';
import type { Storage } from '../../src/db/database.js';
import { type Clock, systemClock } from '../../src/kernel/clock.js';
import { createServices, type Services } from '../../src/services.js';
import { freePort } from './browser.js';
import { databaseUrlOf, startWsvc, stopProcess, type WsvcProcess } from './processes.js';
import { openTestStorage } from './storage.js';

/**
 * Options: `apiOnly` runs `wsvc serve --api-only` (no delivery worker, no jobs: the test drives the
 * in-process `services.delivery` and jobs itself); `clock` is the in-process services' clock (the
 * server keeps the system's); `env` adds settings to both the server and the in-process config.
 */
export interface ServedOptions {
  apiOnly?: boolean;
  clock?: Clock;
  env?: Record<string, string>;
  /** The host name of PUBLIC_URL and of `base` (default 127.0.0.1): passkeys need a domain name such as localhost. */
  host?: string;
}

/** A real `wsvc serve` child on a fresh test database (this project's backend), and in-process services on the same. */
export interface Served {
  base: string;
  storage: Storage & { url: string; schema?: string };
  services: Services;
  config: Config;
  server: WsvcProcess;
  close(): Promise<void>;
}

/** Starts `wsvc serve` (with its delivery worker and jobs unless `apiOnly`) as users run it, on this file's database. */
export async function startServed(opts: ServedOptions = {}): Promise<Served> {
  const storage = await openTestStorage();
  const port = await freePort();
  const base = `http://${opts.host ?? '127.0.0.1'}:${port}`;
  const config = loadConfig(
    {},
    {
      DATABASE_URL: storage.url,
      SECRETS_KEY: process.env.SECRETS_KEY || undefined,
      PUBLIC_URL: base,
      LOG_LEVEL: 'silent',
      PLAN_LIMITS: 'off',
      PASSWORD_HASH_COST: Number(process.env.PASSWORD_HASH_COST) || undefined,
      ...opts.env,
    },
  );
  const services = createServices({ storage, clock: opts.clock ?? systemClock, config });
  let server: WsvcProcess;
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
  } catch (e) {
    await storage.close();
    throw e;
  }
  return {
    base,
    storage,
    services,
    config,
    server,
    async close() {
      await stopProcess(server.child);
      await storage.close();
    },
  };
}
