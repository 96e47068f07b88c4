import { type Db, dialectOf } from '../../db/dialect.js';
import { withRowLock } from '../../db/row-locks.js';
import type { WorkspacesTable, WorkspaceTombstonesTable } from '../../db/types.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

/** SQL for workspaces and the tombstones of deleted ones. */
export const workspacesRepository = {
  insert(db: WriteTx, row: WorkspacesTable) {
    return db.insertInto('workspaces').values(row).execute();
  },

  /** Whether the database holds any workspace (a fresh install holds none). */
  async any(db: Db): Promise<boolean> {
    return (await db.selectFrom('workspaces').select('id').limit(1).executeTakeFirst()) !== undefined;
  },

  /** A workspace's row, if it exists. */
  find(db: Db, id: string): Promise<WorkspacesTable | undefined> {
    return db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();
  },

  /** Schedules the deletion unless one is scheduled; true when it did. */
  async schedule(db: WriteTx, id: string, at: string, deleteAt: string, by: string): Promise<boolean> {
    const r = await db
      .updateTable('workspaces')
      .set({ deletion_scheduled_at: at, delete_at: deleteAt, deletion_scheduled_by: by, updated_at: at })
      .where('id', '=', id)
      .where('deletion_scheduled_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  },

  /** Clears a scheduled deletion; true when one was scheduled. */
  async cancel(db: WriteTx, id: string, at: string): Promise<boolean> {
    const r = await db
      .updateTable('workspaces')
      .set({ deletion_scheduled_at: null, delete_at: null, deletion_scheduled_by: null, updated_at: at })
      .where('id', '=', id)
      .where('deletion_scheduled_at', 'is not', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  },

  /** Workspaces whose grace period has ended at `now`, oldest deadline first. */
  async due(db: Db, now: string): Promise<string[]> {
    const rows = await db
      .selectFrom('workspaces')
      .select('id')
      .where('delete_at', 'is not', null)
      .where('delete_at', '<=', now)
      .orderBy('delete_at')
      .orderBy('id')
      .execute();
    return rows.map((r) => r.id);
  },

  /** Deletes the workspace's own row (its last, after every row that refers to it); false when it was gone. */
  async deleteRow(db: WriteTx, id: string): Promise<boolean> {
    const r = await db.deleteFrom('workspaces').where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  },

  /**
   * Of `ids`, those whose deletion has begun (a tombstone) or that are gone, read in `db`'s change with the
   * workspaces' rows locked (PostgreSQL): the deletion job's first change, which locks the row before it writes
   * the tombstone, waits for this change to commit (so its batches find what it wrote), or this one sees the tombstone.
   */
  async deletingAmong(db: WriteTx, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const sorted = [...new Set(ids)].sort();
    // FOR SHARE: flushes of several processes do not wait for each other, only for the deletion's FOR UPDATE.
    const rows = db.selectFrom('workspaces').select('id').where('id', 'in', sorted).orderBy('id');
    const live = await (dialectOf(db).rowLocks ? rows.forShare() : rows).execute();
    const tombs = await db
      .selectFrom('workspace_tombstones')
      .select('workspace_id')
      .where('workspace_id', 'in', sorted)
      .execute();
    const alive = new Set(live.map((r) => r.id));
    for (const t of tombs) alive.delete(t.workspace_id);
    return new Set(sorted.filter((id) => !alive.has(id)));
  },

  /** Locks the workspace's row until the change ends (PostgreSQL): see deletingAmong. */
  async lock(db: WriteTx, id: string): Promise<void> {
    await withRowLock(db, db.selectFrom('workspaces').select('id').where('id', '=', id)).execute();
  },

  insertTombstone(db: WriteTx, row: WorkspaceTombstonesTable) {
    return db
      .insertInto('workspace_tombstones')
      .values(row)
      .onConflict((oc) => oc.column('workspace_id').doNothing())
      .execute();
  },

  /** The tombstone's deletion time: when the workspace's last row went. */
  async finishTombstone(db: WriteTx, id: string, at: string): Promise<void> {
    await db.updateTable('workspace_tombstones').set({ deleted_at: at }).where('workspace_id', '=', id).execute();
  },

  findTombstone(db: Db, id: string): Promise<WorkspaceTombstonesTable | undefined> {
    return db.selectFrom('workspace_tombstones').selectAll().where('workspace_id', '=', id).executeTakeFirst();
  },

  /** Every workspace, oldest first, with its number of current members (CLI). */
  listWithMemberCounts(db: Db) {
    return db
      .selectFrom('workspaces as w')
      .leftJoin('users as u', (j) => j.onRef('u.workspace_id', '=', 'w.id').on('u.removed_at', 'is', null))
      .select(['w.id', 'w.name', 'w.created_at', (eb) => eb.fn.count<number | string>('u.id').as('members')])
      .groupBy(['w.id', 'w.name', 'w.created_at'])
      .orderBy('w.id')
      .execute();
  },
};
