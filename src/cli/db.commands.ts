import type { Command } from 'commander';
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
      // Loaded when the command runs (src/cli/main.ts).
      const [{ copySqliteToPostgres }, { openStorage }, { createProgress, formatDuration }] = await Promise.all([
        import('../db/copy.js'),
        import('../db/database.js'),
        import('./progress.js'),
      ]);
      const from = openStorage({ url: opts.from });
      const to = openStorage({ url: opts.to, poolSize: 2, statementTimeoutMs: 0 });
      // On a terminal: a live line with rows, rate and time left, on stderr (stdout stays the result).
      const progress = createProgress(json ? { isTTY: false, write: () => true } : process.stderr);
      try {
        const result = await copySqliteToPostgres(from, to, {
          batchRows: opts.batch > 0 ? opts.batch : 500,
          progress: progress.update,
        });
        progress.finish();
        const total = result.tables.reduce((n, t) => n + t.rows, 0);
        const ms = progress.elapsedMs();
        const summary =
          result.tables.map((t) => `${t.table}: ${t.rows} rows`).join('\n') +
          `\ncopied ${total} rows in ${result.tables.length} tables in ${formatDuration(ms)}` +
          ` (${Math.round(ms > 0 ? (total / ms) * 1000 : total)} rows/s)`;
        print(json, { tables: result.tables, rows: total, duration_ms: ms }, summary);
      } finally {
        progress.finish();
        await from.close();
        await to.close();
      }
    });
}
