import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { type Config, settingWarnings } from './config.js';
import { openStorageFromConfig, type Storage } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { openRedis, waitForRedis } from './db/redis.js';
import { systemClock } from './kernel/clock.js';
import { createServices } from './services.js';
import { type RunningWorker, runDeliveryWorker } from './worker.js';

/** The server's first log line while no workspace exists. */
export const FIRST_RUN_HINT =
  'No workspace yet: create the first with `npx wsvc workspaces create --name <name> --admin-email <you@example.com>`, ' +
  'then open the console link it prints to choose your password.';

export interface RunningServer {
  app: FastifyInstance;
  storage: Storage;
  url: string;
  stop(): Promise<void>;
}

/**
 * Opens the database, migrates, listens, and (unless `apiOnly`) runs the delivery worker in the
 * process; `stop` drains in-flight requests and attempts, then closes.
 */
export async function startServer(config: Config, opts: { apiOnly?: boolean } = {}): Promise<RunningServer> {
  const storage = openStorageFromConfig(config);
  await migrateToLatest(storage.db, storage.dialect);
  // REDIS_URL: rate-limit counters shared by every API process (docs/api.md#rate-limits); without it, per process.
  const redis = config.REDIS_URL
    ? openRedis(config.REDIS_URL, { commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS })
    : undefined;
  const logger = config.LOG_LEVEL === 'silent' ? { warn() {}, info() {} } : undefined;
  let app: FastifyInstance | undefined;
  const workerLog = logger ?? {
    warn: (o: object, m: string) => app?.log.warn(o, m),
    info: (o: object, m: string) => app?.log.info(o, m),
  };
  let services: ReturnType<typeof createServices>;
  try {
    services = createServices({ storage, clock: systemClock, config, log: workerLog });
  } catch (err) {
    // PostgreSQL without SECRETS_KEY (docs/settings.md#secrets-at-rest): nothing is left open.
    await storage.close();
    redis?.disconnect();
    throw err;
  }
  app = await buildApp({ config, storage, redis, services, rateLimitNamespace: `${config.REDIS_KEY_PREFIX}rl:` });
  const keyFile = services.secrets.createdKeyFile;
  if (keyFile) {
    app.log.info(
      { path: keyFile },
      `created the secrets key file ${keyFile}: keep it with every backup (a backup without it cannot sign)`,
    );
  }
  // Secrets at rest: a wrong or missing SECRETS_KEY stops here; secrets stored clear are sealed before serving.
  try {
    await services.secrets.prepare((column, n) => app?.log.info({ column, sealed: n.length }, 'sealed stored secrets'));
  } catch (err) {
    await app.close();
    await storage.close();
    redis?.disconnect();
    throw err;
  }
  // A fresh install: the first line says what to do first (docs/console.md, the first sign-in).
  if (!(await services.workspaces.any())) app.log.info(FIRST_RUN_HINT);
  // Start with shared counters when Redis is there; if it is not, serve anyway (fail-open).
  if (redis) await waitForRedis(redis);
  for (const warning of settingWarnings(config)) app.log.warn(warning);
  const url = await app.listen({ port: config.PORT, host: config.HOST });
  const worker: RunningWorker | undefined = opts.apiOnly
    ? undefined
    : await runDeliveryWorker({ services, storage, config, log: app.log });
  let stopping: Promise<void> | null = null;
  return {
    app,
    storage,
    url,
    stop() {
      stopping ??= (async () => {
        await app.close(); // stops accepting, waits for in-flight requests
        await worker?.stop(8_000); // finishes attempts in flight, inside stopOnSignals' 10 s
        await storage.close();
        redis?.disconnect();
      })();
      return stopping;
    },
  };
}

/**
 * SIGTERM/SIGINT: finish in-flight work (bounded), then exit. Until then the process stays up even
 * when nothing else holds Node's event loop: `wsvc worker` on SQLite has only unref'd timers (its
 * poll), where PostgreSQL's LISTEN connection happens to keep a process alive.
 */
export function stopOnSignals(stop: () => Promise<void>, log: (msg: string) => void, graceMs = 10_000): void {
  setInterval(() => {}, 2 ** 30); // held until process.exit below
  let signalled = false;
  const handler = (signal: string) => {
    if (signalled) return;
    signalled = true;
    log(`${signal} received: finishing in-flight work`);
    const timer = setTimeout(() => {
      log(`shutdown took longer than ${graceMs} ms; exiting`);
      process.exit(1);
    }, graceMs);
    timer.unref();
    stop().then(
      () => process.exit(0),
      (err) => {
        log(`shutdown failed: ${String(err)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
}
