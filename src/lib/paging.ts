import { fieldError } from './errors.js';
import { type IdKind, isId } from './ids.js';

/** What a list endpoint asks of the storage layer (D4). */
export interface PageRequest {
  limit: number;
  offset: number;
  /** Continue after this id (decoded cursor), or null. */
  afterId: string | null;
}

export interface Page<T> {
  items: T[];
  total: number;
  limit: number;
  offset: number;
  nextCursor: string | null;
}

/** Opaque D4 cursor: base64url of the last id of the page. */
export function encodeCursor(lastId: string): string {
  return Buffer.from(JSON.stringify({ v: 1, after: lastId })).toString('base64url');
}

/**
 * Decodes a cursor; throws a 400 validation_error for anything it did not issue. With `kind`,
 * the cursor must also come from a list of that kind of id (a users cursor is refused by
 * GET /resources).
 */
export function decodeCursor(token: string, kind?: IdKind): string {
  let after: unknown;
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as unknown;
    if (parsed && typeof parsed === 'object' && (parsed as { v?: unknown }).v === 1) {
      after = (parsed as { after?: unknown }).after;
    }
  } catch {
    // fall through
  }
  if (typeof after === 'string' && after !== '' && (kind === undefined || isId(kind, after))) return after;
  throw fieldError('cursor', 'invalid_value', 'cursor is not a next_cursor issued by this list.');
}

/** Turns validated query values into a PageRequest (offset and cursor are exclusive, D4). */
export function toPageRequest(q: { limit?: number; offset?: number; cursor?: string }, kind?: IdKind): PageRequest {
  if (q.cursor !== undefined && q.offset !== undefined) {
    throw fieldError('offset', 'not_allowed', 'offset cannot be combined with cursor.');
  }
  return {
    limit: q.limit ?? 20,
    offset: q.offset ?? 0,
    afterId: q.cursor === undefined ? null : decodeCursor(q.cursor, kind),
  };
}

/** The D4 `meta` object of a page. */
export function pageMeta(page: Page<unknown>) {
  return { total: page.total, limit: page.limit, offset: page.offset, next_cursor: page.nextCursor };
}
