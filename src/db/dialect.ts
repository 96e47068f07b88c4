import type { Kysely } from 'kysely';
import type { Database } from './types.js';

export type Db = Kysely<Database>;
export type DialectName = 'sqlite' | 'postgres';

/**
 * What differs between the two databases, in one place (STYLE 3). Services and repositories
 * speak Kysely and call these; they never test the dialect name themselves.
 */
export interface Dialect {
  readonly name: DialectName;
  /** Runs `fn` in a write transaction (SQLite: BEGIN IMMEDIATE, so the write lock is taken first). */
  writeTransaction<T>(db: Db, fn: (trx: Db) => Promise<T>): Promise<T>;
  /** Whether `err` is a unique-constraint violation. */
  isUniqueViolation(err: unknown): boolean;
  /** Whether `err` means the database is unreachable (maps to 503). */
  isConnectionError(err: unknown): boolean;
  /** Column type names used by migrations. */
  readonly types: { timestamp: 'text' | 'timestamptz'; json: 'text' | 'jsonb' };
  /** Whether `SELECT … FOR SHARE / FOR UPDATE SKIP LOCKED` exist. */
  readonly rowLocks: boolean;
  /**
   * The schema the connection works in, where there are schemas (PostgreSQL). The migrator needs
   * it: without it, Kysely finds its tables in any schema of the database and skips creating them.
   */
  currentSchema?(db: Db): Promise<string>;
}

/** Parses a JSON column read from either dialect. */
export function readJson<T>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** Serialises a value for a JSON column of either dialect. */
export function writeJson(value: unknown): string {
  return JSON.stringify(value);
}

const epochs = new WeakMap<Db, () => number>();

/**
 * Issue 5: a number that changes whenever a write may have committed to `db`, or undefined where no such
 * number exists (PostgreSQL: other processes write without telling this one). SQLite counts this
 * process's write transactions (after COMMIT, before any caller is answered) and commits by any other
 * connection (`PRAGMA data_version`, e.g. the `wsvc` CLI revoking a key). Every change to API keys and
 * users goes through writeTransaction, so a cache filled at epoch e is exact while the epoch is e.
 */
export function writeEpoch(db: Db): (() => number) | undefined {
  return epochs.get(db);
}

/** Called by a dialect that can tell when its database changed (see writeEpoch). */
export function registerWriteEpoch(db: Db, epoch: () => number): void {
  epochs.set(db, epoch);
}

/** Runs a read synchronously when the connection is free; undefined means "use the normal path". */
export type DirectReader = (sqlText: string, parameters: readonly unknown[]) => unknown[] | undefined;
const readers = new WeakMap<Db, DirectReader>();

/**
 * Issue 5: SQLite's driver is synchronous, so a read on the root database can skip Kysely's executor and
 * connection mutex (several promise hops per query) whenever no transaction is open on the connection.
 * Undefined for PostgreSQL and for transactions.
 */
export function directReader(db: Db): DirectReader | undefined {
  return readers.get(db);
}

/** Called by a dialect that can run reads directly (see directReader). */
export function registerDirectReader(db: Db, reader: DirectReader): void {
  readers.set(db, reader);
}
