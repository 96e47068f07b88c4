import type { Db } from '../../db/dialect.js';
import type { WorkspacesTable } from '../../db/types.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

/** SQL for workspaces. */
export const workspacesRepository = {
  insert(db: WriteTx, row: WorkspacesTable) {
    return db.insertInto('workspaces').values(row).execute();
  },

  /** Whether the database holds any workspace (a fresh install holds none). */
  async any(db: Db): Promise<boolean> {
    return (await db.selectFrom('workspaces').select('id').limit(1).executeTakeFirst()) !== undefined;
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
