import { type Command, InvalidArgumentError, Option } from 'commander';
import { ENVIRONMENTS, type Env } from '../kernel/environments.js';
import type { AuditQuery } from '../modules/audit/audit.schemas.js';
import { isJson } from './admin.commands.js';
import { withServices } from './context.js';
import { print, table } from './output.js';
import { WORKSPACE_DEFAULT_HELP, workspaceOf } from './workspace-option.js';

interface FilterOptions {
  workspace?: string;
  actor?: string;
  action?: string;
  target?: string;
  env?: Env;
  from?: string;
  to?: string;
}

function parseLimit(value: string): number {
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || n < 1 || n > 100) throw new InvalidArgumentError('a number from 1 to 100');
  return n;
}

/** The filters every `wsvc audit` command that reads entries takes (those of GET /v1/audit-log). */
function withFilters(cmd: Command): Command {
  return cmd
    .option('--workspace <ws_id>', WORKSPACE_DEFAULT_HELP)
    .option('--actor <id>', 'entries of this actor: a user id, a key id, or cli, worker, scheduler:…')
    .option('--action <action>', 'one action (resource.created), or a family by its prefix ending in "." (resource.)')
    .option('--target <id>', 'entries about this target id')
    .addOption(new Option('--env <env>', 'entries of this environment').choices([...ENVIRONMENTS]))
    .option('--from <time>', 'from this ISO 8601 time, inclusive')
    .option('--to <time>', 'up to this ISO 8601 time, inclusive');
}

function queryOf(o: FilterOptions): AuditQuery {
  const q: AuditQuery = {};
  if (o.actor !== undefined) q.actor_id = o.actor;
  if (o.action !== undefined) q.action = o.action as AuditQuery['action'];
  if (o.target !== undefined) q.target_id = o.target;
  if (o.env !== undefined) q.env = o.env;
  if (o.from !== undefined) q.from = o.from;
  if (o.to !== undefined) q.to = o.to;
  return q;
}

/** `wsvc audit list|export|verify` (docs/operations.md#audit-log): the audit log, read through the audit service. */
export function registerAuditCommands(program: Command): void {
  const audit = program.command('audit').description('the audit log: list, export and verify its hash chains');

  withFilters(audit.command('list'))
    .description("a workspace's audit entries, newest first")
    .option('--limit <n>', 'how many (1..100)', parseLimit, 20)
    .option('--cursor <cursor>', 'continue after a previous page (its next_cursor)')
    .action(async (opts: FilterOptions & { limit: number; cursor?: string }, cmd: Command) => {
      const page = await withServices(async (s) =>
        s.audit.page(await workspaceOf(s, opts.workspace), undefined, {
          ...queryOf(opts),
          limit: opts.limit,
          cursor: opts.cursor,
        }),
      );
      const text =
        table(
          ['SEQ', 'TIME', 'ACTOR', 'ACTION', 'TARGET', 'ENV'],
          page.items.map((e) => [
            String(e.seq),
            e.time,
            `${e.actor.type}:${e.actor.id} (${e.actor.name})`,
            e.action,
            `${e.target.type}:${e.target.id}`,
            e.env ?? '-',
          ]),
        ) || '(no entries)';
      print(
        isJson(cmd),
        { entries: page.items, total: page.total, next_cursor: page.nextCursor },
        page.nextCursor ? `${text}\nmore: --cursor ${page.nextCursor}` : text,
      );
    });

  withFilters(audit.command('export'))
    .description('every entry of the filtered range as NDJSON on stdout, oldest first')
    .action(async (opts: FilterOptions) => {
      await withServices(async (s) => {
        const workspaceId = await workspaceOf(s, opts.workspace);
        for await (const entry of s.audit.exportRange(workspaceId, queryOf(opts))) {
          process.stdout.write(`${JSON.stringify(entry)}\n`);
        }
      });
    });

  audit
    .command('verify')
    .description("recompute every workspace's hash chain from its anchor; exit 1 naming the first entry that fails")
    .option('--workspace <ws_id>', 'only this workspace (default: every workspace)')
    .option('--file <export.tar.gz>', 'verify the audit log of a workspace export archive instead, offline')
    .action(async (opts: { workspace?: string; file?: string }, cmd: Command) => {
      const checks = opts.file
        ? [await (await import('../modules/exports/export-verify.js')).verifyExportArchive(opts.file)]
        : await withServices((s) => s.audit.verify(opts.workspace));
      const broken = checks.filter((c) => !c.ok);
      const entries = checks.reduce((n, c) => n + c.entries, 0);
      const lines = broken.map((c) => (c.ok ? '' : `workspace ${c.workspaceId}: ${c.problem}`));
      const counted = `${entries} ${entries === 1 ? 'entry' : 'entries'} verified`;
      print(
        isJson(cmd),
        { ok: broken.length === 0, entries, workspaces: checks },
        broken.length === 0
          ? `${counted} in ${checks.length} ${checks.length === 1 ? 'workspace' : 'workspaces'}`
          : `${lines.join('\n')}\nverification failed (${counted} before the first problem)`,
      );
      if (broken.length > 0) process.exitCode = 1;
    });
}
