import { type Db, readJson } from '../../db/dialect.js';
import { pageById } from '../../db/keyset.js';
import type { Env, ResourcesTable } from '../../db/types.js';
import type { PageRequest } from '../../lib/paging.js';
import type { ListResourcesFilter, Resource } from './resources.schemas.js';

/** Row → API object. */
export function toResource(row: ResourcesTable): Resource {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    status: row.status,
    metadata: readJson<Record<string, string>>(row.metadata),
    workspace_id: row.workspace_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export interface Scope {
  workspaceId: string;
  env: Env;
}

/** SQL for resources; every query is confined to one workspace and environment (D10). */
export const resourcesRepository = {
  insert(db: Db, row: ResourcesTable) {
    return db.insertInto('resources').values(row).execute();
  },

  find(db: Db, scope: Scope, id: string): Promise<ResourcesTable | undefined> {
    return db
      .selectFrom('resources')
      .selectAll()
      .where('id', '=', id)
      .where('workspace_id', '=', scope.workspaceId)
      .where('env', '=', scope.env)
      .executeTakeFirst();
  },

  update(
    db: Db,
    scope: Scope,
    id: string,
    set: Partial<Pick<ResourcesTable, 'name' | 'metadata' | 'status' | 'updated_at'>>,
  ) {
    return db
      .updateTable('resources')
      .set(set)
      .where('id', '=', id)
      .where('workspace_id', '=', scope.workspaceId)
      .where('env', '=', scope.env)
      .executeTakeFirst();
  },

  async delete(db: Db, scope: Scope, id: string): Promise<boolean> {
    const r = await db
      .deleteFrom('resources')
      .where('id', '=', id)
      .where('workspace_id', '=', scope.workspaceId)
      .where('env', '=', scope.env)
      .executeTakeFirst();
    return Number(r.numDeletedRows) === 1;
  },

  list(db: Db, scope: Scope, filter: ListResourcesFilter, page: PageRequest) {
    return pageById(
      db,
      'resources',
      (eb) => {
        const conds = [eb('workspace_id', '=', scope.workspaceId), eb('env', '=', scope.env)];
        if (filter.status) conds.push(eb('status', '=', filter.status));
        if (filter.type) conds.push(eb('type', '=', filter.type));
        return eb.and(conds);
      },
      page,
    );
  },
};
