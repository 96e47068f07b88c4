import type { SelectQueryBuilder } from 'kysely';
import { type Db, dialectOf } from './dialect.js';
import type { Database } from './types.js';

// biome-ignore lint/suspicious/noExplicitAny: any selection of any table of the schema
type AnySelect = SelectQueryBuilder<Database, any, any>;

/**
 * `query` reading its rows under a row lock held until the transaction on `db` ends (PostgreSQL
 * `FOR UPDATE`): a concurrent writer of the same rows waits, then reads what this one committed.
 * Unchanged where there are no row locks (SQLite: its write transactions run one at a time).
 */
export function withRowLock<Q extends AnySelect>(db: Db, query: Q): Q {
  return dialectOf(db).rowLocks ? (query.forUpdate() as Q) : query;
}

/** As withRowLock, but rows another transaction holds are skipped instead of waited for (claims). */
export function withRowLockSkipping<Q extends AnySelect>(db: Db, query: Q): Q {
  return dialectOf(db).rowLocks ? (query.forUpdate().skipLocked() as Q) : query;
}
