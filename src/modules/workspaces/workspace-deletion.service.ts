import type { Db, Dialect } from '../../db/dialect.js';
import type { UsersTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { ConflictError, ForbiddenError, fieldError, NotFoundError } from '../../kernel/errors.js';
import type { Actor, SystemActor } from '../../kernel/principal.js';
import type { Change, Unit, WriteTx } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import { auditHeadOf, deleteBatch, WORKSPACE_TABLE_RULES } from './workspace-rows.js';
import { workspacesRepository } from './workspaces.repository.js';

/** How many rows one change of the deletion job deletes at most. */
export const DELETION_BATCH_ROWS = 500;

/** A workspace's deletion as the console and the CLI show it; null fields while none is scheduled. */
export interface DeletionState {
  workspace_id: string;
  scheduled_at: string | null;
  delete_at: string | null;
  scheduled_by: string | null;
}

/**
 * Deleting a workspace (docs/data-lifecycle.md#deleting-a-workspace): an admin schedules it by typing the
 * workspace's name; from then its keys answer 401 workspace_deleted and its deliveries are held; a cancellation
 * within the grace period puts everything back; after it, `runDue` deletes the workspace's rows in bounded,
 * resumable batches (WORKSPACE_TABLE_RULES), keeps its finalized invoices and writes a tombstone.
 */
export function createWorkspaceDeletion(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  /** WORKSPACE_DELETION_GRACE_DAYS. */
  graceDays: number;
  /** The key registry's: takes every key of the workspace's revocation lock exclusive (writes in flight finish). */
  keys: { holdWorkspaceKeys(trx: WriteTx, workspaceId: string): Promise<void> };
  /** The users module's: the workspace's current members; a user's row. */
  users: {
    members(db: Db, workspaceId: string): Promise<UsersTable[]>;
    row(db: Db, id: string): Promise<UsersTable | undefined>;
  };
  /** The exports module's: removes the workspace's export archives from their folder (files, not rows). */
  archives: { removeArchives(workspaceId: string): Promise<void> };
  batchRows?: number;
}) {
  const { db, clock } = deps;
  const limit = deps.batchRows ?? DELETION_BATCH_ROWS;

  /** Only an admin (or the CLI) deletes a workspace, and only their own. */
  function mayDelete(actor: Actor, workspaceId: string): void {
    if (actor.kind === 'system') return;
    if (!('workspaceId' in actor) || actor.workspaceId !== workspaceId) throw new NotFoundError('workspace');
    if (!('role' in actor) || actor.role !== 'admin') {
      throw new ForbiddenError('Only workspace admins can delete or restore the workspace.');
    }
  }

  async function byName(trx: Db, actor: Actor): Promise<{ id: string | null; name: string }> {
    if (actor.userId === null) return { id: null, name: actor.kind === 'system' ? actor.name : 'system' };
    const u = await deps.users.row(trx, actor.userId);
    return { id: actor.userId, name: u?.name || u?.email || actor.userId };
  }

  /**
   * Schedules the workspace's deletion: `confirm` must be its name (400 validation_error otherwise, nothing
   * changed); 409 deletion_scheduled when one is already scheduled. `now`: no grace period (the CLI's `--now`).
   */
  async function schedule(
    u: Unit,
    workspaceId: string,
    input: { confirm: string; now?: boolean },
  ): Promise<DeletionState> {
    mayDelete(u.actor, workspaceId);
    return u.run(
      async (c) => {
        const ws = await workspacesRepository.find(c.trx, workspaceId);
        if (!ws) throw new NotFoundError('workspace');
        if (input.confirm !== ws.name) {
          throw fieldError('confirm', 'mismatch', 'confirm must be the workspace name, exactly as it is spelled.');
        }
        const nowMs = clock.now();
        const at = isoAt(nowMs);
        const deleteAt = isoAt(input.now ? nowMs : nowMs + deps.graceDays * 86_400_000);
        const by = await byName(c.trx, c.actor);
        if (!(await workspacesRepository.schedule(c.trx, workspaceId, at, deleteAt, by.id ?? by.name))) {
          throw new ConflictError('deletion_scheduled', 'The deletion of this workspace is already scheduled.');
        }
        // After the update: writes with the workspace's keys already past their check finish first (Revocation).
        await deps.keys.holdWorkspaceKeys(c.trx, workspaceId);
        await c.emit({ type: 'workspace.deletion_scheduled', workspaceId, at, deleteAt });
        await tellMembers(c, workspaceId, 'workspace.deletion_scheduled', at, by.name, deleteAt);
        c.audit.record({
          action: 'workspace.deletion_scheduled',
          workspaceId,
          target: { type: 'workspace', id: workspaceId },
          env: null,
          changes: changesOf({ delete_at: null }, { delete_at: deleteAt }),
        });
        return { workspace_id: workspaceId, scheduled_at: at, delete_at: deleteAt, scheduled_by: by.id ?? by.name };
      },
      // checkFirst: the change ends the acting key itself, which the check after would see.
      { changesKeys: true, adminOnly: true, checkFirst: true },
    );
  }

  /**
   * Cancels a scheduled deletion within its grace period: the keys work again and the held deliveries resume.
   * 409 deletion_not_scheduled when none is; 409 deletion_in_progress once the grace period has ended.
   */
  async function cancel(u: Unit, workspaceId: string): Promise<DeletionState> {
    mayDelete(u.actor, workspaceId);
    return u.run(
      async (c) => {
        const ws = await workspacesRepository.find(c.trx, workspaceId);
        if (!ws) throw new NotFoundError('workspace');
        const nowMs = clock.now();
        if (!ws.delete_at) {
          throw new ConflictError('deletion_not_scheduled', 'No deletion of this workspace is scheduled.');
        }
        if (Date.parse(ws.delete_at) <= nowMs) {
          throw new ConflictError(
            'deletion_in_progress',
            'The grace period has ended: the workspace is being deleted and can no longer be restored.',
          );
        }
        const at = isoAt(nowMs);
        await workspacesRepository.cancel(c.trx, workspaceId, at);
        const by = await byName(c.trx, c.actor);
        await c.emit({ type: 'workspace.deletion_cancelled', workspaceId, at });
        await tellMembers(c, workspaceId, 'workspace.deletion_cancelled', at, by.name);
        c.audit.record({
          action: 'workspace.deletion_cancelled',
          workspaceId,
          target: { type: 'workspace', id: workspaceId },
          env: null,
          changes: changesOf({ delete_at: isoAt(Date.parse(ws.delete_at)) }, { delete_at: null }),
        });
        return { workspace_id: workspaceId, scheduled_at: null, delete_at: null, scheduled_by: null };
      },
      { changesKeys: true, adminOnly: true },
    );
  }

  /** Every current member is told (email and feed), whatever their role or preferences. */
  async function tellMembers(
    c: Change,
    workspaceId: string,
    type: 'workspace.deletion_scheduled' | 'workspace.deletion_cancelled',
    at: string,
    by: string,
    deleteAt?: string,
  ): Promise<void> {
    const members = await deps.users.members(c.trx, workspaceId);
    await c.emit({
      type: 'security.notice',
      notice: {
        type,
        workspaceId,
        users: members.map((m) => m.id),
        admins: false,
        data: { at, by, ...(deleteAt ? { settings: { delete_at: deleteAt } } : {}) },
      },
    });
  }

  /** The workspace's deletion state; NotFoundError for an unknown workspace. */
  async function state(workspaceId: string): Promise<DeletionState> {
    const ws = await workspacesRepository.find(db, workspaceId);
    if (!ws) throw new NotFoundError('workspace');
    return {
      workspace_id: ws.id,
      scheduled_at: ws.deletion_scheduled_at ? isoAt(Date.parse(ws.deletion_scheduled_at)) : null,
      delete_at: ws.delete_at ? isoAt(Date.parse(ws.delete_at)) : null,
      scheduled_by: ws.deletion_scheduled_by ?? null,
    };
  }

  /**
   * Deletes one workspace whose grace period has ended: its tombstone first (its audit chain's last hash, read
   * before the chain goes), then its rows table by table, at most `limit` per change, then its own row with
   * `workspace.deleted`. Each batch commits on its own, so a run killed midway is continued by the next one.
   */
  async function deleteRows(
    u: Unit<SystemActor>,
    workspaceId: string,
    onBatch?: (table: string, deleted: number) => void,
  ): Promise<number> {
    await u.run(async (c) => {
      // The row locked first: a usage flush writing for this workspace commits before the tombstone, or sees it.
      await workspacesRepository.lock(c.trx, workspaceId);
      if (await workspacesRepository.findTombstone(c.trx, workspaceId)) return;
      const head = await auditHeadOf(c.trx, workspaceId);
      await workspacesRepository.insertTombstone(c.trx, {
        workspace_id: workspaceId,
        deleted_at: isoAt(clock.now()),
        audit_last_seq: head?.seq ?? null,
        audit_last_hash: head?.hash ?? null,
      });
    });
    // Before the rows that name them: a run killed after this finds no file left to remove, and none is lost track of.
    await deps.archives.removeArchives(workspaceId);
    let total = 0;
    for (const rule of WORKSPACE_TABLE_RULES) {
      if (rule.rule === 'keep') continue;
      for (;;) {
        const n = await u.run((c) => deleteBatch(c.trx, deps.dialect.name, rule, workspaceId, limit));
        total += n;
        if (n > 0) onBatch?.(rule.table, n);
        if (n < limit) break;
      }
    }
    await u.run(async (c) => {
      const at = isoAt(clock.now());
      // Another process's run that finished first has told it: `workspace.deleted` is emitted once.
      if (!(await workspacesRepository.deleteRow(c.trx, workspaceId))) return;
      await workspacesRepository.finishTombstone(c.trx, workspaceId, at);
      await c.emit({ type: 'workspace.deleted', workspaceId, at });
    });
    return total + 1;
  }

  /** The `workspace-deletions` job: deletes every workspace whose grace period has ended; returns the rows deleted. */
  async function runDue(u: Unit<SystemActor>): Promise<number> {
    let total = 0;
    for (const id of await workspacesRepository.due(db, isoAt(clock.now()))) total += await deleteRows(u, id);
    return total;
  }

  /** A deleted workspace's tombstone, if it is one. */
  function tombstone(workspaceId: string) {
    return workspacesRepository.findTombstone(db, workspaceId);
  }

  return { schedule, cancel, state, runDue, deleteRows, tombstone };
}
export type WorkspaceDeletion = ReturnType<typeof createWorkspaceDeletion>;
