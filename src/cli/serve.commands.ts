import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../config.js';
import { openStorage } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { startServer, stopOnSignals } from '../server.js';
import { print } from './output.js';

/** `wsvc serve` and `wsvc migrate`. */
export function registerServeCommands(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP API (and, once it exists, the in-process delivery worker)')
    .option('--api-only', 'run the API without a delivery worker')
    .action(async () => {
      let config: ReturnType<typeof loadConfig>;
      try {
        config = loadConfig();
      } catch (err) {
        if (err instanceof ConfigError) {
          process.stderr.write(`${err.message}\n`);
          process.exit(1);
        }
        throw err;
      }
      const server = await startServer(config);
      server.app.log.info(
        { url: server.url, database: config.DATABASE_URL.replace(/\/\/[^@]*@/, '//***@') },
        'listening',
      );
      stopOnSignals(
        () => server.stop(),
        (m) => server.app.log.info(m),
      );
    });

  program
    .command('migrate')
    .description('apply pending database migrations')
    .action(async (_opts, cmd: Command) => {
      const json = Boolean(cmd.optsWithGlobals().json);
      const config = loadConfig();
      const storage = openStorage({ url: config.DATABASE_URL, poolSize: 1 });
      try {
        const applied = await migrateToLatest(storage.db, storage.dialect);
        print(json, { applied }, applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
      } finally {
        await storage.close();
      }
    });
}
