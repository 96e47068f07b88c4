import type { Command } from 'commander';
import { cliWrite, withServices } from './context.js';
import { print } from './output.js';

const isJson = (cmd: Command) => Boolean(cmd.optsWithGlobals().json);

/**
 * `wsvc workspaces delete|cancel-deletion|deletion` (docs/data-lifecycle.md#deleting-a-workspace): an operator
 * schedules a workspace's deletion (the name typed again confirms it), with `--now` deletes it at once, or cancels it.
 */
export function registerWorkspaceDeletionCommands(workspaces: Command): void {
  workspaces
    .command('delete')
    .description(
      "schedule a workspace's deletion: its keys stop at once, its rows are deleted after WORKSPACE_DELETION_GRACE_DAYS",
    )
    .argument('<ws_id>', 'ws_… id')
    .requiredOption('--confirm <name>', "the workspace's name, exactly: confirms which workspace is deleted")
    .option('--now', 'no grace period: delete its rows now (they cannot be restored)')
    .action(async (workspaceId: string, opts: { confirm: string; now?: boolean }, cmd: Command) => {
      const json = isJson(cmd);
      const out = await cliWrite(async (s, u) => {
        const scheduled = await s.workspaceDeletion.schedule(u, workspaceId, { confirm: opts.confirm, now: opts.now });
        if (!opts.now) return { scheduled, deleted: null };
        // Each batch is committed before its line: a process stopped midway is continued by the job.
        const deleted = await s.workspaceDeletion.deleteRows(u, workspaceId, (table, n) => {
          if (!json) process.stdout.write(`deleted ${n} rows of ${table}\n`);
        });
        return { scheduled, deleted };
      });
      print(
        json,
        { deletion: out.scheduled, rows_deleted: out.deleted },
        out.deleted === null
          ? `workspace ${workspaceId}: deletion scheduled; its rows are deleted at ${out.scheduled.delete_at} unless cancelled (wsvc workspaces cancel-deletion ${workspaceId})`
          : `workspace ${workspaceId} deleted (${out.deleted} rows); its finalized invoices and its tombstone remain`,
      );
    });

  workspaces
    .command('cancel-deletion')
    .description("cancel a workspace's scheduled deletion within its grace period: its keys work again")
    .argument('<ws_id>', 'ws_… id')
    .action(async (workspaceId: string, _opts: unknown, cmd: Command) => {
      const out = await cliWrite((s, u) => s.workspaceDeletion.cancel(u, workspaceId));
      print(isJson(cmd), { deletion: out }, `workspace ${workspaceId}: deletion cancelled; its keys work again`);
    });

  workspaces
    .command('deletion')
    .description("show a workspace's scheduled deletion, if any")
    .argument('<ws_id>', 'ws_… id')
    .action(async (workspaceId: string, _opts: unknown, cmd: Command) => {
      const out = await withServices((s) => s.workspaceDeletion.state(workspaceId));
      print(
        isJson(cmd),
        { deletion: out },
        out.delete_at === null
          ? `workspace ${workspaceId}: no deletion scheduled`
          : `workspace ${workspaceId}: deletion scheduled at ${out.scheduled_at} by ${out.scheduled_by}; rows deleted at ${out.delete_at}`,
      );
    });
}
