import { monotonicFactory } from 'ulid';

/** Id prefixes of D2. */
export const ID_PREFIX = {
  workspace: 'ws_',
  user: 'usr_',
  resource: 'res_',
  webhook: 'wh_',
  event: 'evt_',
  delivery: 'dlv_',
  key: 'key_',
  request: 'req_',
} as const;
export type IdKind = keyof typeof ID_PREFIX;

const nextUlid = monotonicFactory();

/** A new D2 id: prefix + ULID (time-sortable, monotonic within this process). */
export function newId(kind: IdKind, now: number = Date.now()): string {
  return ID_PREFIX[kind] + nextUlid(now);
}

const ULID_RE = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** Whether `value` has the shape of an id of `kind` (used to 404 early without a query). */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = ID_PREFIX[kind];
  return value.startsWith(prefix) && ULID_RE.test(value.slice(prefix.length));
}
