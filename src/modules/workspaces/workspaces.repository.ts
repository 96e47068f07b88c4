import type { Db } from '../../db/dialect.js';
import { withRowLock } from '../../db/row-locks.js';
import type { WorkspacesTable } from '../../db/types.js';

/** SQL for workspaces. */
export const workspacesRepository = {
  insert(db: Db, row: WorkspacesTable) {
    return db.insertInto('workspaces').values(row).execute();
  },

  /** Locks the workspace's row until the transaction ends (serialises per-workspace limits). */
  async lock(db: Db, id: string): Promise<void> {
    await withRowLock(db, db.selectFrom('workspaces').select('id').where('id', '=', id)).execute();
  },
};
