import { type RawBuilder, sql } from 'kysely';
import { KID_LENGTH, SEALED_VERSION_PREFIX, sealedPrefix } from '../lib/sealed.js';

/**
 * Where `column` (non-null) holds a value to seal (src/lib/sealed.ts): a clear one when `kid` is null, or one not
 * sealed under `kid` (clear, or under another key) — compared with `substr`, not LIKE, whose `_` is a wildcard.
 */
export function toSeal(column: string, kid: string | null): RawBuilder<boolean> {
  const prefix = kid === null ? SEALED_VERSION_PREFIX : sealedPrefix(kid);
  return sql<boolean>`substr(${sql.ref(column)}, 1, ${sql.lit(prefix.length)}) <> ${prefix}`;
}

/** Where `column` holds a value sealed under a key not in `kids`: one this process cannot open. */
export function sealedUnderOther(column: string, kids: readonly string[]): RawBuilder<boolean> {
  const start = SEALED_VERSION_PREFIX.length + 1;
  return sql<boolean>`substr(${sql.ref(column)}, 1, ${sql.lit(SEALED_VERSION_PREFIX.length)}) = ${SEALED_VERSION_PREFIX} and substr(${sql.ref(column)}, ${sql.lit(start)}, ${sql.lit(KID_LENGTH)}) not in (${sql.join(kids)})`;
}
