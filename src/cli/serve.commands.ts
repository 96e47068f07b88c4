import type { Command } from 'commander';
import type { Config } from '../config.js';
import { print } from './output.js';

// Each command loads what it runs when it runs (src/cli/main.ts: `wsvc --help` loads none of it).

/** Settings for a long-running command; a bad one stops start-up naming every bad setting. */
async function configOrExit(): Promise<Config> {
  const { ConfigError, loadConfig } = await import('../config.js');
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
      const config = await configOrExit();
      const [{ startServer, stopOnSignals }, { forgetServerUrl, recordServerUrl }] = await Promise.all([
        import('../server.js'),
        import('./server-url.js'),
      ]);
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
      const config = await configOrExit();
      const [
        { pino },
        { settingWarnings },
        { openStorageFromConfig },
        { migrateToLatest },
        { loggerOptions },
        { systemClock },
        { stopOnSignals },
        { createServices },
        { runDeliveryWorker },
      ] = await Promise.all([
        import('pino'),
        import('../config.js'),
        import('../db/database.js'),
        import('../db/migrate.js'),
        import('../http/logging.js'),
        import('../kernel/clock.js'),
        import('../server.js'),
        import('../services.js'),
        import('../worker.js'),
      ]);
      const log = pino(loggerOptions(config.LOG_LEVEL));
      const storage = openStorageFromConfig(config);
      await migrateToLatest(storage.db, storage.dialect);
      for (const warning of settingWarnings(config)) log.warn(warning);
      let services: ReturnType<typeof createServices>;
      try {
        services = createServices({ storage, clock: systemClock, config, log });
        await services.secrets.prepare((column, n) => log.info({ column, sealed: n.length }, 'sealed stored secrets'));
      } catch (err) {
        await storage.close();
        throw err;
      }
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
      const [{ loadConfig }, { openStorageFromConfig }, { migrateToLatest }] = await Promise.all([
        import('../config.js'),
        import('../db/database.js'),
        import('../db/migrate.js'),
      ]);
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
