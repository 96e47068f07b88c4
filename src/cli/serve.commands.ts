import type { Command } from 'commander';
import { pino } from 'pino';
import { ConfigError, loadConfig, settingWarnings } from '../config.js';
import { openStorageFromConfig } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { loggerOptions } from '../http/logging.js';
import { systemClock } from '../lib/clock.js';
import { startServer, stopOnSignals } from '../server.js';
import { createServices } from '../services.js';
import { runDeliveryWorker } from '../worker.js';
import { print } from './output.js';
import { forgetServerUrl, recordServerUrl } from './server-url.js';

/** Settings for a long-running command; a bad one stops start-up naming every bad setting. */
function configOrExit(): ReturnType<typeof loadConfig> {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

/** `wsvc serve` and `wsvc migrate`. */
export function registerServeCommands(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP API and, in the same process, the webhook delivery worker')
    .option('--api-only', 'run the API without a delivery worker (run `wsvc worker` processes instead)')
    .action(async (opts: { apiOnly?: boolean }) => {
      const config = configOrExit();
      const server = await startServer(config, { apiOnly: opts.apiOnly });
      server.app.log.info(
        { url: server.url, database: config.DATABASE_URL.replace(/\/\/[^@]*@/, '//***@') },
        'listening',
      );
      const address = server.app.server.address();
      recordServerUrl(config, typeof address === 'object' && address ? address.port : config.PORT);
      stopOnSignals(
        async () => {
          forgetServerUrl(config);
          await server.stop();
        },
        (m) => server.app.log.info(m),
      );
    });

  program
    .command('worker')
    .description('run only the webhook delivery worker (any number side by side on PostgreSQL)')
    .action(async () => {
      const config = configOrExit();
      const log = pino(loggerOptions(config.LOG_LEVEL));
      const storage = openStorageFromConfig(config);
      await migrateToLatest(storage.db, storage.dialect);
      for (const warning of settingWarnings(config)) log.warn(warning);
      const services = createServices({ storage, clock: systemClock, config, log });
      const running = await runDeliveryWorker({ services, storage, config, log });
      stopOnSignals(
        async () => {
          await running.stop(8_000);
          await storage.close();
        },
        (m) => log.info(m),
      );
    });

  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(async (_opts, cmd: Command) => {
      const json = Boolean(cmd.optsWithGlobals().json);
      const config = loadConfig();
      const storage = openStorageFromConfig(config, { poolSize: 1 });
      try {
        const applied = await migrateToLatest(storage.db, storage.dialect);
        print(json, { applied }, applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
      } finally {
        await storage.close();
      }
    });
}
