import { type Db, dialectOf, readJson } from '../../db/dialect.js';
import { batchAfterId, pageById, toPage } from '../../db/keyset.js';
import { type Param, prepared } from '../../db/prepared.js';
import { withRowLock } from '../../db/row-locks.js';
import type { Env, ResourcesTable } from '../../db/types.js';
import type { Tenant } from '../../kernel/principal.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import type { WriteTx } from '../../platform/unit-of-work.js';
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
 * their transaction, so the count commits with the change (docs/performance.md#totals-without-count).
 */
async function bump(
  db: WriteTx,
  tenant: Tenant,
  status: ResourcesTable['status'],
  type: ResourcesTable['type'],
  delta: number,
  deferred = false,
) {
  const slot = Math.floor(Math.random() * COUNT_SLOTS);
  const values = { ws: tenant.workspaceId, env: tenant.env, status, type, slot, delta };
  await (deferred ? bumpQuery.later(db, values) : bumpQuery.execute(db, values));
}

/** The parameters of a list or count query: the tenant and the filters present. */
interface ListParams {
  ws: string;
  env: Env;
  status?: ResourcesTable['status'];
  type?: ResourcesTable['type'];
  /** Keyset: the last id of the previous page. */
  after?: string;
  limit?: number;
  offset?: number;
}
type Keyed = Pick<ListParams, 'ws' | 'env'> & { id: string };

// Performance (docs/performance.md#queries-built-once): the hot queries are built and compiled once (src/db/prepared.ts).
const bumpQuery = prepared(
  (
    db,
    $: Param<{
      ws: string;
      env: Env;
      status: ResourcesTable['status'];
      type: ResourcesTable['type'];
      slot: number;
      delta: number;
    }>,
  ) =>
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

const insertQuery = prepared((db, $: Param<ResourcesTable>) =>
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

const byId = (db: Db, $: Param<Keyed>) =>
  db
    .selectFrom('resources')
    .selectAll()
    .where('id', '=', $('id'))
    .where('workspace_id', '=', $('ws'))
    .where('env', '=', $('env'));
const findQuery = prepared((db, $: Param<Keyed>) => byId(db, $));
// The row a write changes, read under a row lock held until the write's transaction ends (docs/api.md#resources):
// concurrent writes of one resource run one after another, each seeing what the previous committed.
const findForWriteQuery = prepared((db, $: Param<Keyed>) => withRowLock(db, byId(db, $)));

/**
 * How a page starts: at the beginning, after skipping `offset` rows, or after the id `after` (`counted`: also
 * counting the rows up to it, for a cursor issued without its offset).
 */
type Mode = 'first' | 'offset' | 'after' | 'counted';
/** Which filters a list has: the shape of its SQL. */
type Shape = `${'s' | '-'}${'t' | '-'}`;
const SHAPES: readonly Shape[] = ['--', 's-', '-t', 'st'];
const MODES: readonly Mode[] = ['first', 'offset', 'after', 'counted'];
/** The page alone reads the same rows after a cursor whether or not its offset is counted (`before` counts it). */
type RowsMode = Exclude<Mode, 'counted'>;
const ROWS_MODES: readonly RowsMode[] = ['first', 'offset', 'after'];
const shapeOf = (filter: ListResourcesFilter): Shape => `${filter.status ? 's' : '-'}${filter.type ? 't' : '-'}`;

const matching = (db: Db, $: Param<ListParams>, shape: Shape) => {
  let q = db.selectFrom('resources').where('workspace_id', '=', $('ws')).where('env', '=', $('env'));
  if (shape[0] === 's') q = q.where('status', '=', $('status'));
  if (shape[1] === 't') q = q.where('type', '=', $('type'));
  return q;
};

/** SUM over the maintained counts for one filter shape. */
const counted = (db: Db, $: Param<ListParams>, shape: Shape) => {
  let c = db
    .selectFrom('resource_counts')
    .select((eb) => eb.fn.sum<number | string | null>('n').as('n'))
    .where('workspace_id', '=', $('ws'))
    .where('env', '=', $('env'));
  if (shape[0] === 's') c = c.where('status', '=', $('status'));
  if (shape[1] === 't') c = c.where('type', '=', $('type'));
  return c;
};

/** The rows of one list shape and start, ordered by id. */
const pageRows = (db: Db, $: Param<ListParams>, shape: Shape, mode: Mode) => {
  const base = matching(db, $, shape);
  const rows = base.selectAll().orderBy('id');
  if (mode === 'after' || mode === 'counted') return rows.where('id', '>', $('after')).limit($('limit'));
  // A deep offset skips through the (covering) index alone, then reads only the page's rows. The page's
  // ids are a derived table joined on the primary key, not `id in (…)`: PostgreSQL plans the derived
  // table (its LIMIT keeps it from being pulled up) once, then one primary-key lookup per row, with or
  // without statistics; `in` planned as a semi-join ran the offset scan once per row of the workspace on a
  // table not analyzed yet (docs/performance.md#lists-in-one-statement; test/storage/postgres-offset-plan.test.ts checks the plan).
  if (mode === 'offset') {
    const page = base.select('id').orderBy('id').limit($('limit')).offset($('offset')).as('page');
    return db.selectFrom(page).innerJoin('resources as r', 'r.id', 'page.id').selectAll('r').orderBy('r.id');
  }
  return rows.limit($('limit'));
};

/**
 * Performance (docs/performance.md#lists-in-one-statement): a list is one
 * statement, one round trip on PostgreSQL. The total (and for `counted` the rows up to the cursor) is a one-row
 * table, the page left-joined to it, so each row carries the total and an empty page is one row of nulls with it.
 * SQLite, with no round trips, keeps the separate statements (`rows`, `count`, `before`): there the join
 * materializes and sorts the page, about 35 µs more a list.
 */
const pageQuery = (shape: Shape, mode: Mode) =>
  prepared((db, $: Param<ListParams>) =>
    db
      .selectFrom(
        db
          .selectNoFrom((eb) => [
            counted(db, $, shape).as('total'),
            (mode === 'counted'
              ? matching(db, $, shape)
                  .select((c) => c.fn.countAll<number | string>().as('n'))
                  .where('id', '<=', $('after'))
              : eb.lit(0)
            ).as('before'),
          ])
          .as('c'),
      )
      .leftJoin(pageRows(db, $, shape, mode).as('p'), (join) => join.onTrue())
      .selectAll('p')
      .select(['c.total', 'c.before'])
      .orderBy('p.id'),
  );

/** The total alone (SQLite's lists, a page newest first, the count of a workspace's resources). */
const countQuery = (shape: Shape) => prepared((db, $: Param<ListParams>) => counted(db, $, shape));
/** The page alone (SQLite). */
const rowsQuery = (shape: Shape, mode: RowsMode) =>
  prepared((db, $: Param<ListParams>) => pageRows(db, $, shape, mode));
/** How many matching rows come up to the id `after`: the offset of a cursor issued without one (SQLite). */
const beforeQuery = (shape: Shape) =>
  prepared((db, $: Param<ListParams>) =>
    matching(db, $, shape)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('id', '<=', $('after')),
  );

/** Every list query, one per shape and start, and the count alone, defined up front. */
const LIST = Object.fromEntries(
  SHAPES.map((shape) => [
    shape,
    {
      page: Object.fromEntries(MODES.map((m) => [m, pageQuery(shape, m)])),
      rows: Object.fromEntries(ROWS_MODES.map((m) => [m, rowsQuery(shape, m)])),
      count: countQuery(shape),
      before: beforeQuery(shape),
    },
  ]),
) as Record<
  Shape,
  {
    page: Record<Mode, ReturnType<typeof pageQuery>>;
    rows: Record<RowsMode, ReturnType<typeof rowsQuery>>;
    count: ReturnType<typeof countQuery>;
    before: ReturnType<typeof beforeQuery>;
  }
>;

/**
 * A page newest first or by name prefix (docs/api.md#resources): built per request through the
 * tenant's (workspace_id, env, id) index, read backwards for `desc`. Without a prefix the total still
 * comes from the maintained counts; with one it is counted. The prefix is compared as the first N code
 * points of the name (`substr` and `length` count code points on both databases), not with LIKE: no
 * wildcard to escape, case-sensitive on SQLite as on PostgreSQL.
 */
function listOther(db: Db, tenant: Tenant, filter: ListResourcesFilter, page: PageRequest) {
  const { status, type, name_prefix: prefix } = filter;
  return pageById(
    db,
    'resources',
    (eb) => {
      const conds = [eb('workspace_id', '=', tenant.workspaceId), eb('env', '=', tenant.env)];
      if (status) conds.push(eb('status', '=', status));
      if (type) conds.push(eb('type', '=', type));
      if (prefix !== undefined) {
        conds.push(eb(eb.fn('substr', ['name', eb.lit(1), eb.val([...prefix].length)]), '=', prefix));
      }
      return eb.and(conds);
    },
    page,
    prefix === undefined
      ? {
          total: {
            run: () => resourcesRepository.count(db, tenant, { status, type }),
            // The same SQL with the values in place of its parameters (a column of the page's one statement).
            query: () => {
              const values: ListParams = { ws: tenant.workspaceId, env: tenant.env, status, type };
              return counted(db, (k) => values[k], shapeOf(filter));
            },
          },
        }
      : {},
  );
}

/** SQL for resources; every query is confined to one workspace and environment (docs/api.md#environments). */
export const resourcesRepository = {
  /** A batch of the workspace's rows after `afterId`, oldest first (an export's keyset walk). */
  exportBatch: (db: Db, workspaceId: string, env: Env, afterId: string | null, limit: number) =>
    batchAfterId(db, 'resources', workspaceId, afterId, limit, { env }),
  /**
   * Inserts a resource and counts it; call inside the change's transaction. Both are sent just before the
   * transaction's next statement, or with its COMMIT, where the dialect defers (dialect.ts, `later`).
   */
  async insert(db: WriteTx, row: ResourcesTable) {
    await insertQuery.later(db, row);
    await bump(db, { workspaceId: row.workspace_id, env: row.env }, row.status, row.type, 1, true);
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
    db: WriteTx,
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
        // Two statuses (docs/api.md#resources): the previous one is the other.
        const previous = set.status === 'active' ? 'archived' : 'active';
        // The two count rows are locked in one order in every transaction (active, then archived):
        // an archive and an unarchive of two resources that took them in opposite orders deadlocked
        // on PostgreSQL (40P01, a 500; seen once in CI in test/resources/races.test.ts).
        if (previous === 'active') {
          await bump(db, tenant, previous, flipped.type, -1);
          await bump(db, tenant, set.status, flipped.type, 1);
        } else {
          await bump(db, tenant, set.status, flipped.type, 1);
          await bump(db, tenant, previous, flipped.type, -1);
        }
        return true;
      }
      return false;
    }
    return Number((await q.executeTakeFirst()).numUpdatedRows) > 0;
  },

  /** Deletes a resource and uncounts it; call inside the change's transaction. */
  async delete(db: WriteTx, tenant: Tenant, id: string): Promise<boolean> {
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

  /** Resources matching the status and type filters, from the maintained counts. */
  async count(db: Db, tenant: Tenant, filter: Pick<ListResourcesFilter, 'status' | 'type'>): Promise<number> {
    const values: ListParams = { ws: tenant.workspaceId, env: tenant.env, ...filter };
    return Number((await LIST[shapeOf(filter)].count.execute(db, values)).rows[0]?.n ?? 0);
  },

  /**
   * One page: by offset, or after a cursor's id (its offset counted when an older cursor lacks it), with the
   * total: one statement where statements are round trips (see pageQuery).
   */
  async list(db: Db, tenant: Tenant, filter: ListResourcesFilter, page: PageRequest): Promise<Page<ResourcesTable>> {
    if (filter.name_prefix !== undefined || page.order === 'desc') return listOther(db, tenant, filter, page);
    const mode: Mode =
      page.afterId !== null ? (page.afterOffset == null ? 'counted' : 'after') : page.offset > 0 ? 'offset' : 'first';
    const values: ListParams = {
      ws: tenant.workspaceId,
      env: tenant.env,
      ...filter,
      limit: page.limit + 1,
      offset: page.offset,
      after: page.afterId ?? undefined,
    };
    const queries = LIST[shapeOf(filter)];
    let rows: ResourcesTable[];
    let total: number;
    let before: number;
    if (dialectOf(db).roundTrips) {
      const joined = (await queries.page[mode].execute(db, values)).rows;
      total = Number(joined[0]?.total ?? 0);
      before = Number(joined[0]?.before ?? 0);
      // No row matched: the one row of the left join is nulls but the counts.
      rows = (joined[0]?.id === null ? [] : joined) as ResourcesTable[];
    } else {
      total = Number((await queries.count.execute(db, values)).rows[0]?.n ?? 0);
      before = mode === 'counted' ? Number((await queries.before.execute(db, values)).rows[0]?.n ?? 0) : 0;
      rows = (await queries.rows[mode === 'counted' ? 'after' : mode].execute(db, values)).rows;
    }
    return toPage(rows, page, total, page.afterId === null ? page.offset : (page.afterOffset ?? before));
  },
};
