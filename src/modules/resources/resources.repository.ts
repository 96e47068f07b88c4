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

const COUNT_SLOTS = 16;

/**
 * Adds `delta` to the resource_counts row of (scope, status, type) in a random slot: callers pass
 * their transaction, so the count commits with the change (issue 5: meta.total without COUNT(*)).
 */
async function bump(
  db: Db,
  scope: Scope,
  status: ResourcesTable['status'],
  type: ResourcesTable['type'],
  delta: number,
) {
  const slot = Math.floor(Math.random() * COUNT_SLOTS);
  await db
    .insertInto('resource_counts')
    .values({ workspace_id: scope.workspaceId, env: scope.env, status, type, slot, n: delta })
    .onConflict((oc) =>
      oc
        .columns(['workspace_id', 'env', 'status', 'type', 'slot'])
        .doUpdateSet((eb) => ({ n: eb('resource_counts.n', '+', eb.ref('excluded.n')) })),
    )
    .execute();
}

/** SQL for resources; every query is confined to one workspace and environment (D10). */
export const resourcesRepository = {
  /** Inserts a resource and counts it; call inside the change's transaction. */
  async insert(db: Db, row: ResourcesTable) {
    await db.insertInto('resources').values(row).execute();
    await bump(db, { workspaceId: row.workspace_id, env: row.env }, row.status, row.type, 1);
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

  /** Updates a resource (and its counts when the status changes); call inside the change's transaction. */
  async update(
    db: Db,
    scope: Scope,
    id: string,
    set: Partial<Pick<ResourcesTable, 'name' | 'metadata' | 'status' | 'updated_at'>>,
  ) {
    const q = db
      .updateTable('resources')
      .set(set)
      .where('id', '=', id)
      .where('workspace_id', '=', scope.workspaceId)
      .where('env', '=', scope.env);
    if (set.status !== undefined) {
      // Only the statement that really flips the status moves the counts: under PostgreSQL's read
      // committed, a concurrent flip re-checks `status <>` after the row lock and updates nothing.
      const flipped = await q.where('status', '<>', set.status).returning('type').executeTakeFirst();
      if (flipped) {
        // Two statuses (D13): the previous one is the other.
        const previous = set.status === 'active' ? 'archived' : 'active';
        await bump(db, scope, previous, flipped.type, -1);
        await bump(db, scope, set.status, flipped.type, 1);
        return;
      }
    }
    await q.executeTakeFirst();
  },

  /** Deletes a resource and uncounts it; call inside the change's transaction. */
  async delete(db: Db, scope: Scope, id: string): Promise<boolean> {
    const gone = await db
      .deleteFrom('resources')
      .where('id', '=', id)
      .where('workspace_id', '=', scope.workspaceId)
      .where('env', '=', scope.env)
      .returning(['status', 'type'])
      .executeTakeFirst();
    if (gone) await bump(db, scope, gone.status, gone.type, -1);
    return gone !== undefined;
  },

  /** Resources matching the filter, from the maintained counts. */
  async count(db: Db, scope: Scope, filter: ListResourcesFilter): Promise<number> {
    let q = db
      .selectFrom('resource_counts')
      .select((eb) => eb.fn.sum<number | string | null>('n').as('n'))
      .where('workspace_id', '=', scope.workspaceId)
      .where('env', '=', scope.env);
    if (filter.status) q = q.where('status', '=', filter.status);
    if (filter.type) q = q.where('type', '=', filter.type);
    return Number((await q.executeTakeFirst())?.n ?? 0);
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
      { total: () => resourcesRepository.count(db, scope, filter) },
    );
  },
};
