import type { Command } from 'commander';
import { copySqliteToPostgres } from '../db/copy.js';
import { openStorage } from '../db/database.js';
import { print } from './output.js';

/** `wsvc db copy`: move a SQLite start into PostgreSQL (docs/operations.md). */
export function registerDbCommands(program: Command): void {
  const db = program.command('db').description('database maintenance');
  db.command('copy')
    .description('copy every table of a SQLite database into an empty PostgreSQL database (migrating both)')
    .requiredOption('--from <url>', 'source, sqlite:<path>')
    .requiredOption('--to <url>', 'target, postgres://user@host:port/db')
    .option('--batch <rows>', 'rows per insert', (v) => Number.parseInt(v, 10), 500)
    .action(async (opts: { from: string; to: string; batch: number }, cmd: Command) => {
      const json = Boolean(cmd.optsWithGlobals().json);
      if (!opts.from.startsWith('sqlite:') || !/^postgres(ql)?:\/\//.test(opts.to)) {
        throw new Error('--from must be sqlite:<path> and --to a postgres:// URL');
      }
      const from = openStorage({ url: opts.from });
      const to = openStorage({ url: opts.to, poolSize: 2, statementTimeoutMs: 0 });
      try {
        const result = await copySqliteToPostgres(from, to, {
          batchRows: opts.batch > 0 ? opts.batch : 500,
          log: json ? undefined : (m) => process.stdout.write(`${m}\n`),
        });
        const total = result.tables.reduce((n, t) => n + t.rows, 0);
        print(json, { tables: result.tables }, `copied ${total} rows in ${result.tables.length} tables`);
      } finally {
        await from.close();
        await to.close();
      }
    });
}
