import { fieldError } from '../kernel/errors.js';
import { type IdKind, isId } from '../kernel/ids.js';

/** What a list endpoint asks of the storage layer (docs/api.md#lists-and-paging). */
export interface PageRequest {
  limit: number;
  offset: number;
  /** Continue after this id (decoded cursor), or null. */
  afterId: string | null;
  /**
   * With `afterId`: how many records came before the cursor's page when it was issued, carried in
   * the cursor so a keyset page needs no COUNT over everything before it (docs/performance.md#totals-without-count). Absent or null:
   * counted.
   */
  afterOffset?: number | null;
  /** `desc`: newest first (docs/api.md#paging); absent or `asc`: oldest first, as before. */
  order?: PageOrder;
}

export type PageOrder = 'asc' | 'desc';

export interface Page<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
  nextCursor: string | null;
}

/**
 * Opaque cursor (docs/api.md#lists-and-paging): base64url of the last id of the page and the offset of the next page;
 * a newest-first list's also says so (`d: 1`), so the other order refuses it.
 */
export function encodeCursor(lastId: string, nextOffset?: number, order: PageOrder = 'asc'): string {
  const body: Record<string, unknown> =
    nextOffset === undefined ? { v: 1, after: lastId } : { v: 1, after: lastId, o: nextOffset };
  // Only a newest-first cursor says so, so ascending cursors stay exactly what they were.
  if (order === 'desc') body.d = 1;
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

export interface DecodedCursor {
  after: string;
  /** Offset of the page the cursor continues to; null for cursors issued without it. */
  offset: number | null;
  /** The order of the list that issued it. */
  order: PageOrder;
}

/**
 * Decodes a cursor; throws a 400 validation_error for anything it did not issue. With `kind`,
 * the cursor must also come from a list of that kind of id (a users cursor is refused by
 * GET /resources).
 */
export function decodeCursor(token: string, kind?: IdKind): DecodedCursor {
  let after: unknown;
  let offset: unknown;
  let desc: unknown;
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (parsed && typeof parsed === 'object' && (parsed as { v?: unknown }).v === 1) {
      after = (parsed as { after?: unknown }).after;
      offset = (parsed as { o?: unknown }).o ?? null;
      desc = (parsed as { d?: unknown }).d ?? 0;
    }
  } catch {
    // fall through
  }
  const offsetOk = offset === null || (Number.isSafeInteger(offset) && (offset as number) >= 0);
  const descOk = desc === 0 || desc === 1;
  if (typeof after === 'string' && after !== '' && (kind === undefined || isId(kind, after)) && offsetOk && descOk) {
    return { after, offset: offset as number | null, order: desc === 1 ? 'desc' : 'asc' };
  }
  throw fieldError('cursor', 'invalid_value', 'cursor is not a next_cursor issued by this list.');
}

/** Turns validated query values into a PageRequest (offset and cursor are exclusive, docs/api.md#lists-and-paging). */
export function toPageRequest(
  q: { limit?: number; offset?: number; cursor?: string; order?: PageOrder },
  kind?: IdKind,
): PageRequest {
  if (q.cursor !== undefined && q.offset !== undefined) {
    throw fieldError('offset', 'not_allowed', 'offset cannot be combined with cursor.');
  }
  const cursor = q.cursor === undefined ? null : decodeCursor(q.cursor, kind);
  const order = q.order ?? 'asc';
  if (cursor && cursor.order !== order) {
    throw fieldError(
      'cursor',
      'invalid_value',
      `cursor was issued for order=${cursor.order}; send the same order with it.`,
    );
  }
  return {
    limit: q.limit ?? 20,
    offset: q.offset ?? 0,
    afterId: cursor?.after ?? null,
    afterOffset: cursor?.offset ?? null,
    order,
  };
}

/** The `meta` object of a page. */
export function pageMeta(page: Page<unknown>) {
  return { total: page.total, limit: page.limit, offset: page.offset, next_cursor: page.nextCursor };
}
