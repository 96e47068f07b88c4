import { type Db, readJson } from '../../db/dialect.js';
import { pageById, toPage } from '../../db/keyset.js';
import { prepared } from '../../db/prepared.js';
import { withRowLock } from '../../db/row-locks.js';
import type { ResourcesTable } from '../../db/types.js';
import type { PageRequest } from '../../lib/paging.js';
import type { Tenant } from '../../lib/principal.js';
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

const COUNT_SLOTS = 16;

/**
 * Adds `delta` to the resource_counts row of (tenant, status, type) in a random slot: callers pass
 * their transaction, so the count commits with the change (issue 5: meta.total without COUNT(*)).
 */
async function bump(
  db: Db,
  tenant: Tenant,
  status: ResourcesTable['status'],
  type: ResourcesTable['type'],
  delta: number,
) {
  const slot = Math.floor(Math.random() * COUNT_SLOTS);
  await bumpQuery.execute(db, { ws: tenant.workspaceId, env: tenant.env, status, type, slot, delta });
}

// Issue 5: the hot queries are built and compiled once (src/db/prepared.ts).
const bumpQuery = prepared((db, $) =>
  db
    .insertInto('resource_counts')
    .values({
      workspace_id: $('ws'),
      env: $('env'),
      status: $('status'),
      type: $('type'),
      slot: $('slot'),
      n: $('delta'),
    })
    .onConflict((oc) =>
      oc
        .columns(['workspace_id', 'env', 'status', 'type', 'slot'])
        .doUpdateSet((eb) => ({ n: eb('resource_counts.n', '+', eb.ref('excluded.n')) })),
    ),
);

const insertQuery = prepared((db, $) =>
  db.insertInto('resources').values({
    id: $('id'),
    workspace_id: $('workspace_id'),
    env: $('env'),
    name: $('name'),
    type: $('type'),
    status: $('status'),
    metadata: $('metadata'),
    created_at: $('created_at'),
    updated_at: $('updated_at'),
  }),
);

const findQuery = prepared((db, $) =>
  db
    .selectFrom('resources')
    .selectAll()
    .where('id', '=', $('id'))
    .where('workspace_id', '=', $('ws'))
    .where('env', '=', $('env')),
);

// The row a write changes, read under a row lock held until the write's transaction ends (issue 9):
// concurrent writes of one resource run one after another, each seeing what the previous committed.
const findForWriteQuery = prepared((db, $) =>
  withRowLock(
    db,
    db
      .selectFrom('resources')
      .selectAll()
      .where('id', '=', $('id'))
      .where('workspace_id', '=', $('ws'))
      .where('env', '=', $('env')),
  ),
);

type Mode = 'first' | 'offset' | 'after';
const shapeOf = (filter: ListResourcesFilter) => `${filter.status ? 's' : '-'}${filter.type ? 't' : '-'}`;
const listQueries = new Map<string, ReturnType<typeof prepared<ResourcesTable>>>();
const countQueries = new Map<string, ReturnType<typeof prepared<{ n: number | string | null }>>>();

/** The rows query of one list shape (which filters are present, how the page starts). */
function listQuery(filter: ListResourcesFilter, mode: Mode) {
  const shape = `${shapeOf(filter)}:${mode}`;
  let q = listQueries.get(shape);
  if (!q) {
    q = prepared((db, $) => {
      let base = db.selectFrom('resources').where('workspace_id', '=', $('ws')).where('env', '=', $('env'));
      if (filter.status) base = base.where('status', '=', $('status'));
      if (filter.type) base = base.where('type', '=', $('type'));
      const rows = base.selectAll().orderBy('id');
      if (mode === 'after') return rows.where('id', '>', $('after')).limit($('limit'));
      // A deep offset skips through the (covering) index alone, then reads only the page's rows.
      if (mode === 'offset') {
        return rows.where('id', 'in', base.select('id').orderBy('id').limit($('limit')).offset($('offset')));
      }
      return rows.limit($('limit'));
    });
    listQueries.set(shape, q);
  }
  return q;
}

/** SUM over the maintained counts for one filter shape. */
function countQuery(filter: ListResourcesFilter) {
  const shape = shapeOf(filter);
  let q = countQueries.get(shape);
  if (!q) {
    q = prepared((db, $) => {
      let c = db
        .selectFrom('resource_counts')
        .select((eb) => eb.fn.sum<number | string | null>('n').as('n'))
        .where('workspace_id', '=', $('ws'))
        .where('env', '=', $('env'));
      if (filter.status) c = c.where('status', '=', $('status'));
      if (filter.type) c = c.where('type', '=', $('type'));
      return c;
    });
    countQueries.set(shape, q);
  }
  return q;
}

/** SQL for resources; every query is confined to one workspace and environment (D10). */
export const resourcesRepository = {
  /** Inserts a resource and counts it; call inside the change's transaction. */
  async insert(db: Db, row: ResourcesTable) {
    await insertQuery.execute(db, row as unknown as Record<string, unknown>);
    await bump(db, { workspaceId: row.workspace_id, env: row.env }, row.status, row.type, 1);
  },

  async find(db: Db, tenant: Tenant, id: string): Promise<ResourcesTable | undefined> {
    return (await findQuery.execute(db, { id, ws: tenant.workspaceId, env: tenant.env })).rows[0];
  },

  /** The resource under a row lock until the transaction ends; call inside the change's transaction first. */
  async findForWrite(db: Db, tenant: Tenant, id: string): Promise<ResourcesTable | undefined> {
    return (await findForWriteQuery.execute(db, { id, ws: tenant.workspaceId, env: tenant.env })).rows[0];
  },

  /**
   * Updates a resource (and its counts when the status changes); call inside the change's transaction.
   * Returns whether a row changed.
   */
  async update(
    db: Db,
    tenant: Tenant,
    id: string,
    set: Partial<Pick<ResourcesTable, 'name' | 'metadata' | 'status' | 'updated_at'>>,
  ): Promise<boolean> {
    const q = db
      .updateTable('resources')
      .set(set)
      .where('id', '=', id)
      .where('workspace_id', '=', tenant.workspaceId)
      .where('env', '=', tenant.env);
    if (set.status !== undefined) {
      // Only the statement that really flips the status moves the counts: a concurrent flip that
      // committed first makes `status <>` false here (re-checked after the row lock), so nothing moves.
      const flipped = await q.where('status', '<>', set.status).returning('type').executeTakeFirst();
      if (flipped) {
        // Two statuses (D13): the previous one is the other.
        const previous = set.status === 'active' ? 'archived' : 'active';
        await bump(db, tenant, previous, flipped.type, -1);
        await bump(db, tenant, set.status, flipped.type, 1);
        return true;
      }
      return false;
    }
    return Number((await q.executeTakeFirst()).numUpdatedRows) > 0;
  },

  /** Deletes a resource and uncounts it; call inside the change's transaction. */
  async delete(db: Db, tenant: Tenant, id: string): Promise<boolean> {
    const gone = await db
      .deleteFrom('resources')
      .where('id', '=', id)
      .where('workspace_id', '=', tenant.workspaceId)
      .where('env', '=', tenant.env)
      .returning(['status', 'type'])
      .executeTakeFirst();
    if (gone) await bump(db, tenant, gone.status, gone.type, -1);
    return gone !== undefined;
  },

  /** Resources matching the filter, from the maintained counts. */
  async count(db: Db, tenant: Tenant, filter: ListResourcesFilter): Promise<number> {
    const values = { ws: tenant.workspaceId, env: tenant.env, ...filter };
    return Number((await countQuery(filter).execute(db, values)).rows[0]?.n ?? 0);
  },

  async list(db: Db, tenant: Tenant, filter: ListResourcesFilter, page: PageRequest) {
    // A cursor issued without its offset (older servers) needs the generic path, which counts it.
    if (page.afterId === null || page.afterOffset != null) {
      const mode: Mode = page.afterId !== null ? 'after' : page.offset > 0 ? 'offset' : 'first';
      const values = {
        ws: tenant.workspaceId,
        env: tenant.env,
        ...filter,
        after: page.afterId,
        limit: page.limit + 1,
        offset: page.offset,
      };
      const total = await resourcesRepository.count(db, tenant, filter);
      const { rows } = await listQuery(filter, mode).execute(db, values);
      return toPage(rows, page, total, page.afterId === null ? page.offset : (page.afterOffset as number));
    }
    return pageById(
      db,
      'resources',
      (eb) => {
        const conds = [eb('workspace_id', '=', tenant.workspaceId), eb('env', '=', tenant.env)];
        if (filter.status) conds.push(eb('status', '=', filter.status));
        if (filter.type) conds.push(eb('type', '=', filter.type));
        return eb.and(conds);
      },
      page,
      { total: () => resourcesRepository.count(db, tenant, filter) },
    );
  },
};
