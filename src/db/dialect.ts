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
  writeTransaction<T>(db: Db, fn: (trx: Db) => Promise<T>, opts?: WriteOptions): Promise<T>;
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
  /**
   * Tells other processes, when `trx` commits, that deliveries are due (PostgreSQL NOTIFY on
   * DELIVERY_CHANNEL; PostgreSQL workers LISTEN). Absent where there is no such channel (SQLite polls).
   */
  notifyOnCommit?(trx: Db): Promise<void>;
}

/** PostgreSQL channel on which new deliveries are announced to workers. */
export const DELIVERY_CHANNEL = 'wsvc_deliveries';

export interface WriteOptions {
  /**
   * The change writes no API key and no user's role or removal, so verified keys cached by this process
   * stay valid (docs/performance.md, change 4: see keysEpoch). Without it, a committed write invalidates them.
   */
  keepsKeys?: boolean;
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
 * Performance (docs/performance.md, change 4): a number that changes whenever a write that may change API keys or users has committed to
 * `db`, or undefined where no such number exists (PostgreSQL: other processes write without telling this
 * one). SQLite counts this process's write transactions not marked `keepsKeys` (after COMMIT, before any
 * caller is answered) and commits by any other connection (`PRAGMA data_version`, e.g. the `wsvc` CLI
 * revoking a key). Every change to API keys and users goes through writeTransaction, so a cache of
 * verified keys filled at epoch e is exact while the epoch is e.
 */
export function keysEpoch(db: Db): (() => number) | undefined {
  return epochs.get(db);
}

/** Called by a dialect that can tell when keys or users may have changed (see keysEpoch). */
export function registerKeysEpoch(db: Db, epoch: () => number): void {
  epochs.set(db, epoch);
}

/** Runs a read synchronously when the connection is free; undefined means "use the normal path". */
export type DirectReader = (sqlText: string, parameters: readonly unknown[]) => unknown[] | undefined;
const readers = new WeakMap<Db, DirectReader>();

/**
 * Performance (docs/performance.md, change 5): SQLite's driver is synchronous, so a read on the root database can skip Kysely's executor and
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
