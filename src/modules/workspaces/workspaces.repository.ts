import type { Db } from '../../db/dialect.js';
import type { WorkspacesTable } from '../../db/types.js';

/** SQL for workspaces. */
export const workspacesRepository = {
  insert(db: Db, row: WorkspacesTable) {
    return db.insertInto('workspaces').values(row).execute();
  },

  async exists(db: Db, id: string): Promise<boolean> {
    return (await db.selectFrom('workspaces').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
  },
};
