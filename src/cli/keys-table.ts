import { SCOPES } from '../kernel/scopes.js';
import { table } from './output.js';

/** A key as `wsvc keys list` shows it (the key registry's list, never the secret). */
export interface ListedKey {
  id: string;
  env: string;
  prefix: string;
  name: string;
  owner_email: string;
  scopes: readonly string[];
  last_used_at: string | null;
  expires_at?: string | null;
  revoked_at: string | null;
}

/** Longest scope list the SCOPES column shows as it is; a longer one is shown as a count. */
export const SCOPES_COLUMN = 32;

/**
 * The SCOPES cell: `all` for a key not narrowed to some scopes (it may do what its owner's role
 * allows), the list when it fits SCOPES_COLUMN characters or `wide`, else how many scopes of all.
 */
export function scopesCell(scopes: readonly string[], wide: boolean): string {
  if (SCOPES.every((s) => scopes.includes(s))) return 'all';
  const list = scopes.join(',');
  return wide || list.length <= SCOPES_COLUMN ? list : `${scopes.length} of ${SCOPES.length}`;
}

/** The text of `wsvc keys list` at `now` (ISO): one row per key; '' when there are none. */
export function keysTable(keys: readonly ListedKey[], opts: { now: string; wide: boolean }): string {
  const state = (k: ListedKey) =>
    k.revoked_at
      ? `revoked ${k.revoked_at}`
      : k.expires_at && k.expires_at <= opts.now
        ? `expired ${k.expires_at}`
        : 'active';
  return table(
    ['ID', 'ENV', 'PREFIX', 'NAME', 'OWNER', 'SCOPES', 'LAST USED', 'STATUS'],
    keys.map((k) => [
      k.id,
      k.env,
      `${k.prefix}…`,
      k.name,
      k.owner_email,
      scopesCell(k.scopes, opts.wide),
      // Minute precision, written by usage metering (docs/usage.md).
      k.last_used_at ? new Date(k.last_used_at).toISOString() : 'never',
      state(k),
    ]),
  );
}
