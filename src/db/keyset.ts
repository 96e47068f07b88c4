import { type AliasableExpression, type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import { encodeCursor, type Page, type PageRequest } from '../lib/paging.js';
import { type Db, dialectOf } from './dialect.js';
import type { Database } from './types.js';

/** The counts' columns in the one-statement page: names no paged table has. */
const TOTAL = 'wsvc_total';
const BEFORE = 'wsvc_before';

type PagedTable = 'users' | 'resources' | 'webhooks' | 'events' | 'deliveries' | 'api_keys' | 'exports';
type Where<T extends PagedTable> = (eb: ExpressionBuilder<Database, T>) => Expression<SqlBool>;

export interface PageOptions {
  /**
   * Counts the matching records without a COUNT(*) over them (e.g. maintained counters): `run` on its own, or
   * `query` (one row, one value) as a column of the page's one statement where statements are round trips.
   */
  total?: { run: () => Promise<number>; query: () => AliasableExpression<unknown> };
}

/**
 * One page of `table` ordered by id (ids are time-sortable, so this is creation order; `req.order`
 * `desc` is newest first):
 * offset or keyset (`afterId`), plus `total` and the page's offset.
 */
export async function pageById<T extends PagedTable>(
  db: Db,
  table: T,
  where: Where<T>,
  req: PageRequest,
  opts: PageOptions = {},
): Promise<Page<Database[T]>> {
  // Kysely cannot type a query over a table chosen at run time; the casts stay inside here.
  // biome-ignore lint/suspicious/noExplicitAny: see above
  const base = (db as any).selectFrom(table).where(where);
  // A cursor carries the offset of its page (docs/performance.md#totals-without-count); only an old cursor without it is counted.
  const countBefore = req.afterId !== null && (req.afterOffset ?? null) === null;
  // Newest first (`order=desc`) walks the same indexes backwards: ids are time-sortable.
  const desc = req.order === 'desc';
  const dir = desc ? 'desc' : 'asc';
  const counts = () =>
    opts.total && !countBefore
      ? // biome-ignore lint/suspicious/noExplicitAny: see above
        (db as any).selectNoFrom([opts.total.query().as(TOTAL), sql<number>`0`.as(BEFORE)])
      : base.select([
          sql<number>`count(*)`.as(TOTAL),
          countBefore
            ? desc
              ? sql<number>`coalesce(sum(case when id >= ${req.afterId} then 1 else 0 end), 0)`.as(BEFORE)
              : sql<number>`coalesce(sum(case when id <= ${req.afterId} then 1 else 0 end), 0)`.as(BEFORE)
            : sql<number>`0`.as(BEFORE),
        ]);
  let rowsQuery = base.selectAll().orderBy('id', dir);
  if (req.afterId !== null) {
    rowsQuery = rowsQuery.where('id', desc ? '<' : '>', req.afterId).limit(req.limit + 1);
  } else if (req.offset > 0) {
    // Skip through the (covering) index alone, then read only the page's rows: a deep offset no
    // longer reads every skipped row (docs/performance.md#lists-in-one-statement).
    // The page's ids are a derived table joined on the primary key, as in resources.repository.ts#listQuery:
    // PostgreSQL runs the offset scan once with or without statistics, where `id in (…)` planned as a
    // semi-join ran it once per row on a table not analyzed yet (test/storage/postgres-offset-plan.test.ts).
    const page = base
      .select('id')
      .orderBy('id', dir)
      .limit(req.limit + 1)
      .offset(req.offset)
      .as('page');
    // biome-ignore lint/suspicious/noExplicitAny: see above
    rowsQuery = (db as any)
      .selectFrom(page)
      .innerJoin(`${table} as r`, 'r.id', 'page.id')
      .selectAll('r')
      .orderBy('r.id', dir);
  } else {
    rowsQuery = rowsQuery.limit(req.limit + 1);
  }
  let total: number;
  let before = 0;
  let rows: Database[T][];
  if (dialectOf(db).roundTrips) {
    // One statement where statements are round trips (PostgreSQL), as the resource list: the counts are a
    // one-row table, the page left-joined to it, so an empty page is one row of nulls with the counts.
    // biome-ignore lint/suspicious/noExplicitAny: see above
    const joined: Record<string, unknown>[] = await (db as any)
      .selectFrom(counts().as('c'))
      .leftJoin(rowsQuery.as('p'), (join: { onTrue: () => unknown }) => join.onTrue())
      .selectAll('p')
      .select([`c.${TOTAL}`, `c.${BEFORE}`])
      .orderBy('p.id', dir)
      .execute();
    total = Number(joined[0]?.[TOTAL] ?? 0);
    before = Number(joined[0]?.[BEFORE] ?? 0);
    rows = (joined[0]?.id == null ? [] : joined).map(
      ({ [TOTAL]: _t, [BEFORE]: _b, ...row }) => row,
    ) as unknown as Database[T][];
  } else if (opts.total && !countBefore) {
    total = await opts.total.run();
    rows = await rowsQuery.execute();
  } else {
    const c = await counts().executeTakeFirst();
    total = Number(c?.[TOTAL] ?? 0);
    before = Number(c?.[BEFORE] ?? 0);
    rows = await rowsQuery.execute();
  }
  return toPage(rows, req, total, req.afterId === null ? req.offset : (req.afterOffset ?? before));
}

/** The Page of up to `limit + 1` rows fetched for `req`, at `offset` (the extra row only says there is more). */
export function toPage<R extends { id: string }>(rows: R[], req: PageRequest, total: number, offset: number): Page<R> {
  const hasMore = rows.length > req.limit;
  const items = hasMore ? rows.slice(0, req.limit) : rows;
  const last = items.at(-1);
  return {
    items,
    total,
    limit: req.limit,
    offset,
    nextCursor: hasMore && last ? encodeCursor(last.id, offset + items.length, req.order) : null,
  };
}

type ScopedTable = 'resources' | 'webhooks' | 'events';

/** One row of `table` by id, only inside the caller's workspace and environment (docs/api.md#environments); else undefined. */
export function findInScope<T extends ScopedTable>(
  db: Db,
  table: T,
  scope: { workspaceId: string; env: string },
  id: string,
): Promise<Database[T] | undefined> {
  // As in pageById: Kysely cannot type a table chosen at run time; the cast stays here.
  // biome-ignore lint/suspicious/noExplicitAny: see above
  return (db as any)
    .selectFrom(table)
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', '=', scope.workspaceId)
    .where('env', '=', scope.env)
    .executeTakeFirst();
}

type BatchTable = PagedTable | 'invoices';

/**
 * One batch of a workspace's rows of `table` after `afterId` (null: from the first), oldest first: the keyset
 * walk of an export, whose memory is one batch however many rows the workspace holds.
 */
export function batchAfterId<T extends BatchTable>(
  db: Db,
  table: T,
  workspaceId: string,
  afterId: string | null,
  limit: number,
  opts: { env?: string; where?: Where<Exclude<T, 'invoices'>> } = {},
): Promise<Database[T][]> {
  // As in pageById: Kysely cannot type a table chosen at run time; the casts stay here.
  // biome-ignore lint/suspicious/noExplicitAny: see above
  let q = (db as any).selectFrom(table).selectAll().where('workspace_id', '=', workspaceId);
  // With the environment the walk follows the (workspace_id, env, id) index instead of sorting the workspace's rows.
  if (opts.env !== undefined) q = q.where('env', '=', opts.env);
  if (opts.where) q = q.where(opts.where);
  if (afterId !== null) q = q.where('id', '>', afterId);
  return q.orderBy('id', 'asc').limit(limit).execute();
}
