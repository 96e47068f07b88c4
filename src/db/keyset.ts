import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely';
import { encodeCursor, type Page, type PageRequest } from '../lib/paging.js';
import type { Db } from './dialect.js';
import type { Database } from './types.js';

type PagedTable = 'users' | 'resources' | 'webhooks' | 'events' | 'deliveries';
type Where<T extends PagedTable> = (eb: ExpressionBuilder<Database, T>) => Expression<SqlBool>;

/**
 * One D4 page of `table` ordered by id (ids are time-sortable, so this is creation order):
 * offset or keyset (`afterId`), plus `total` and the page's offset, in two queries.
 */
export async function pageById<T extends PagedTable>(
  db: Db,
  table: T,
  where: Where<T>,
  req: PageRequest,
): Promise<Page<Database[T]>> {
  // Kysely cannot type a query over a table chosen at run time; the casts stay inside here.
  // biome-ignore lint/suspicious/noExplicitAny: see above
  const base = (db as any).selectFrom(table).where(where);
  const counts = await base
    .select([
      sql<number>`count(*)`.as('total'),
      req.afterId === null
        ? sql<number>`0`.as('before')
        : sql<number>`coalesce(sum(case when id <= ${req.afterId} then 1 else 0 end), 0)`.as('before'),
    ])
    .executeTakeFirst();
  let rowsQuery = base
    .selectAll()
    .orderBy('id')
    .limit(req.limit + 1);
  if (req.afterId !== null) rowsQuery = rowsQuery.where('id', '>', req.afterId);
  else if (req.offset > 0) rowsQuery = rowsQuery.offset(req.offset);
  const rows = (await rowsQuery.execute()) as Database[T][];
  const hasMore = rows.length > req.limit;
  const items = hasMore ? rows.slice(0, req.limit) : rows;
  const last = items.at(-1) as { id: string } | undefined;
  return {
    items,
    total: Number(counts?.total ?? 0),
    limit: req.limit,
    offset: req.afterId === null ? req.offset : Number(counts?.before ?? 0),
    nextCursor: hasMore && last ? encodeCursor(last.id) : null,
  };
}

type ScopedTable = 'resources' | 'webhooks' | 'events';

/** One row of `table` by id, only inside the caller's workspace and environment (D10); else undefined. */
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
