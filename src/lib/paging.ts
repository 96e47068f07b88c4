import { fieldError } from './errors.js';
import { type IdKind, isId } from './ids.js';

/** What a list endpoint asks of the storage layer (docs/api.md#lists-and-paging). */
export interface PageRequest {
  limit: number;
  offset: number;
  /** Continue after this id (decoded cursor), or null. */
  afterId: string | null;
  /**
   * With `afterId`: how many records came before the cursor's page when it was issued, carried in
   * the cursor so a keyset page needs no COUNT over everything before it (docs/performance.md, "Earlier changes" 1). Absent or null:
   * counted.
   */
  afterOffset?: number | null;
}

export interface Page<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
  nextCursor: string | null;
}

/** Opaque cursor (docs/api.md#lists-and-paging): base64url of the last id of the page and the offset of the next page. */
export function encodeCursor(lastId: string, nextOffset?: number): string {
  const body = nextOffset === undefined ? { v: 1, after: lastId } : { v: 1, after: lastId, o: nextOffset };
  return Buffer.from(JSON.stringify(body)).toString('base64url');
}

export interface DecodedCursor {
  after: string;
  /** Offset of the page the cursor continues to; null for cursors issued without it. */
  offset: number | null;
}

/**
 * Decodes a cursor; throws a 400 validation_error for anything it did not issue. With `kind`,
 * the cursor must also come from a list of that kind of id (a users cursor is refused by
 * GET /resources).
 */
export function decodeCursor(token: string, kind?: IdKind): DecodedCursor {
  let after: unknown;
  let offset: unknown;
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (parsed && typeof parsed === 'object' && (parsed as { v?: unknown }).v === 1) {
      after = (parsed as { after?: unknown }).after;
      offset = (parsed as { o?: unknown }).o ?? null;
    }
  } catch {
    // fall through
  }
  const offsetOk = offset === null || (Number.isSafeInteger(offset) && (offset as number) >= 0);
  if (typeof after === 'string' && after !== '' && (kind === undefined || isId(kind, after)) && offsetOk) {
    return { after, offset: offset as number | null };
  }
  throw fieldError('cursor', 'invalid_value', 'cursor is not a next_cursor issued by this list.');
}

/** Turns validated query values into a PageRequest (offset and cursor are exclusive, docs/api.md#lists-and-paging). */
export function toPageRequest(q: { limit?: number; offset?: number; cursor?: string }, kind?: IdKind): PageRequest {
  if (q.cursor !== undefined && q.offset !== undefined) {
    throw fieldError('offset', 'not_allowed', 'offset cannot be combined with cursor.');
  }
  const cursor = q.cursor === undefined ? null : decodeCursor(q.cursor, kind);
  return {
    limit: q.limit ?? 20,
    offset: q.offset ?? 0,
    afterId: cursor?.after ?? null,
    afterOffset: cursor?.offset ?? null,
  };
}

/** The `meta` object of a page. */
export function pageMeta(page: Page<unknown>) {
  return { total: page.total, limit: page.limit, offset: page.offset, next_cursor: page.nextCursor };
}
