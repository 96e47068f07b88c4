import { CompiledQuery, type DialectAdapter, type Kysely, type Dialect as KyselyDialect } from 'kysely';
import type { Database } from './types.js';

export type Db = Kysely<Database>;
export type DialectName = 'sqlite' | 'postgres';

/**
 * What differs between the two databases, and what belongs to one open connection (its write queue,
 * prepared queries, key-cache epoch), in one object created per connection by `openSqlite` or
 * `openPostgres`. Services and repositories speak Kysely and call these; they never test
 * the dialect name themselves.
 */
export interface Dialect {
  readonly name: DialectName;
  /** Runs `fn` in a write transaction (SQLite: BEGIN IMMEDIATE, so the write lock is taken first). */
  writeTransaction<T>(db: Db, fn: (trx: Db) => Promise<T>, opts?: WriteOptions): Promise<T>;
  /** Whether `err` is a unique-constraint violation. */
  isUniqueViolation(err: unknown): boolean;
  /**
   * Whether `err` means the database cannot serve now: unreachable, overloaded, timed out, locked
   * by another process past the busy timeout (maps to 503 with Retry-After).
   */
  isUnavailable(err: unknown): boolean;
  /**
   * Whether `err` means the database cannot be reached at all (refused, reset, no answer within the
   * query or connect timeout), not merely busy: it opens the breaker (src/db/breaker.ts).
   */
  isUnreachable(err: unknown): boolean;
  /** Column type names used by migrations. */
  readonly types: { timestamp: 'text' | 'timestamptz'; json: 'text' | 'jsonb' };
  /** Whether `SELECT … FOR SHARE / FOR UPDATE SKIP LOCKED` exist. */
  readonly rowLocks: boolean;
  /**
   * Whether write transactions run one at a time (SQLite: one connection, BEGIN IMMEDIATE): work that orders
   * a workspace's writers (the audit log's numbering) costs no waiting inside the transaction there.
   */
  readonly serialWrites: boolean;
  /**
   * Revocation locks, held until `trx` ends. A write holds its credentials' locks shared while it runs;
   * a revocation takes its credential's lock exclusive before it commits, so it waits only for the
   * writes already running (fair queue: later writes wait behind it and then see it). PostgreSQL:
   * transaction-level advisory locks; SQLite: nothing to do, write transactions run one at a time.
   */
  holdShared(trx: Db, names: readonly string[]): Promise<void>;
  /** See holdShared. */
  holdExclusive(trx: Db, name: string): Promise<void>;
  /**
   * Takes `name` exclusive until `trx` ends if no other transaction holds it; false at once if one does
   * (a request already running with the same Idempotency-Key). A dead process's locks are gone with it.
   * SQLite: always true, its write transactions run one at a time.
   */
  tryHoldExclusive(trx: Db, name: string): Promise<boolean>;
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
  /**
   * Runs `fn` (an erasure, docs/data-lifecycle.md#erasing-a-person) so that what it deletes or overwrites leaves
   * no copy in the database's files: SQLite overwrites freed content with zeros (`secure_delete`) while it runs,
   * then rebuilds the file (VACUUM, which drops the copies earlier page splits left in unused space; it waits for
   * no reader but holds the write lock while it runs), checkpoints the WAL into the file and truncates it. Absent where no file of the service keeps old rows
   * readable (PostgreSQL: a dump or a query sees live rows only; VACUUM reclaims the dead ones).
   */
  secureErase?<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * After each change of a periodic job (the unit of work calls it for `scheduler:` actors): leaves the write
   * lock free as long as the change took (`tookMs`, its wait for the lock included; at most 100 ms), so other
   * processes' writes get their turns while a job writes many changes in a row (billing-invoices catching up, an
   * invoice a period). SQLite: another process waiting for the file's write lock sleeps in SQLite's busy handler
   * (up to 100 ms a try) and found the lock taken by the job's next transaction at each try: with 322 invoices in
   * a row no API write got in for 3 s (one waiting past busy_timeout, 5 s, would fail). Absent where waiters
   * queue on the lock itself (PostgreSQL).
   */
  yieldToOtherWriters?(tookMs: number): Promise<void>;
  /**
   * Performance (docs/performance.md#the-key-cache-and-its-epochs): a number that changes whenever a write that may change API keys or users has committed,
   * or absent where no such number exists (PostgreSQL: other processes write without telling this
   * one). SQLite counts this connection's write transactions not marked `keepsKeys` (after COMMIT,
   * before any caller is answered) and commits by any other connection (`PRAGMA data_version`, e.g.
   * the `wsvc` CLI revoking a key). A cache of verified keys filled at epoch e is exact while it is e.
   */
  readonly keysEpoch?: () => number;
  /**
   * Where there is no `keysEpoch` (PostgreSQL), the key-cache epoch that every process shares in Redis
   * (src/modules/keys/keys-epoch.ts, ARCHITECTURE.md "Revocation"), set by whoever opens Redis (the server, the CLI).
   * A write transaction not marked `keepsKeys` announces itself to it before it begins and after it
   * ends; when the announcement before cannot be made, the write is refused (503). Unset: not
   * announced, and no process caches keys without hearing from it (the API reads every key).
   */
  keyChanges?: KeyChangeAnnouncer;
  /**
   * Performance (docs/performance.md#sqlite-reads-without-kyselys-executor): SQLite's driver is synchronous, so a read on the root database can skip Kysely's executor
   * and connection mutex whenever no transaction is open. Absent on PostgreSQL.
   */
  readonly directReader?: DirectReader;
  /**
   * Performance (docs/performance.md#sqlite-reads-without-kyselys-executor): the same for a write of a `prepared()` query inside the open write
   * transaction (SQLite's one connection, which the write queue holds while a batch runs): the cached
   * statement runs at once, without Kysely's executor. Undefined when no transaction is open. Absent on PostgreSQL.
   */
  readonly directWriter?: DirectWriter;
  /**
   * Performance (docs/performance.md#queries-built-once): PostgreSQL runs a read outside any transaction as a named
   * prepared statement of the connection it gets from the pool (parsed and planned once per
   * connection, then only bound and executed). Absent on SQLite.
   */
  readonly namedReader?: NamedReader;
  /**
   * Performance (docs/performance.md#queries-built-once): PostgreSQL's SQL texts of `prepared()` queries and their
   * statement names. A pooled connection runs a query whose text is here as that named prepared
   * statement, inside transactions too (writes, and reads on a transaction's connection), so
   * PostgreSQL parses and plans it once per connection. Absent on SQLite.
   */
  readonly statementNames?: Map<string, string>;
  /** Queries of `prepared()` compiled for this connection, by query (docs/performance.md#queries-built-once). */
  readonly preparedQueries: Map<object, unknown>;
  /**
   * Performance (docs/performance.md, "A write in one round trip on PostgreSQL"): a write transaction's
   * statements passed to `later` are sent just before its next statement, or with its COMMIT, as one string
   * (PostgreSQL). Absent: `later` runs them at once (SQLite).
   */
  readonly defers?: boolean;
  /**
   * Whether each statement is a round trip to a server (PostgreSQL), so reads sent together as one statement save
   * one each. Absent: statements are calls in this process (SQLite), where separate ones can be cheaper.
   */
  readonly roundTrips?: boolean;
}

/** Tells every process sharing a key cache that keys or users may change (src/modules/keys/keys-epoch.ts). */
export interface KeyChangeAnnouncer {
  /** Before the write begins: every cached key is stale, and none is cached until `settled`. Rejects when it cannot say so. */
  unsettle(): Promise<void>;
  /** After the write committed or rolled back: stale again (entries read meanwhile), caching may resume. */
  settle(): Promise<void>;
}

/** PostgreSQL channel on which new deliveries are announced to workers. */
export const DELIVERY_CHANNEL = 'wsvc_deliveries';

export interface WriteOptions {
  /**
   * The change writes no API key and no user's role or removal, so verified keys cached by this process
   * stay valid (docs/performance.md#the-key-cache-and-its-epochs, see Dialect.keysEpoch). Without it, a committed write invalidates them.
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

/** Runs a read synchronously when the connection is free; undefined means "use the normal path". */
export type DirectReader = (sqlText: string, parameters: readonly unknown[]) => unknown[] | undefined;

/** Runs a write statement in the open transaction; its result as Kysely gives it, or undefined when none is open. */
export type DirectWriter = (
  sqlText: string,
  parameters: readonly unknown[],
) => { rows: unknown[]; numAffectedRows?: bigint; insertId?: bigint } | undefined;

/** Runs a read as the prepared statement `name` (always the same `sqlText`) on a pooled connection. */
export type NamedReader = (name: string, sqlText: string, parameters: readonly unknown[]) => Promise<unknown[]>;

/** The Kysely adapter of a connection opened by this package: it carries the connection's Dialect. */
interface AdapterWithDialect extends DialectAdapter {
  readonly wsvc: Dialect;
}

/**
 * The Dialect of the connection `db` belongs to (`db` may be the database, a transaction or one
 * connection of it: they share one Kysely adapter, which carries it).
 */
export function dialectOf(db: Db): Dialect {
  return (db.getExecutor().adapter as AdapterWithDialect).wsvc;
}

/** Kysely's dialect for a connection, with `dialect` attached to its adapter (see dialectOf). */
export function carrying(kysely: KyselyDialect, dialect: Dialect): KyselyDialect {
  return {
    createAdapter: () => Object.assign(Object.create(kysely.createAdapter()), { wsvc: dialect }) as AdapterWithDialect,
    createDriver: () => kysely.createDriver(),
    createIntrospector: (db) => kysely.createIntrospector(db),
    createQueryCompiler: () => kysely.createQueryCompiler(),
  };
}

/** The query text that carries a deferred statement to the connection (see `later`; PgConnection, src/db/pg-driver.ts). */
export const DEFER_MARKER = '/* wsvc:later */';

/**
 * Runs `query` in `trx`, or, where the dialect defers (`Dialect.defers`) and `trx` is a transaction,
 * queues it to be sent, in order, just before the transaction's next statement or with its COMMIT: for writes whose
 * result nobody reads and whose errors nobody catches where they are made (an error surfaces at the
 * statement or COMMIT it was sent with, and the transaction fails as a whole).
 */
export async function later(trx: Db, query: CompiledQuery): Promise<void> {
  if (trx.isTransaction && dialectOf(trx).defers) {
    await trx.executeQuery(CompiledQuery.raw(DEFER_MARKER, [query.sql, query.parameters]));
    return;
  }
  await trx.executeQuery(query);
}

/**
 * The SQLSTATE the re-check functions of migration 026 raise when a credential no longer holds
 * (PostgreSQL): the unit of work answers it as `credentialEnded`.
 */
export const CREDENTIAL_ENDED_CODE = 'WK401';
export function isCredentialEnded(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === CREDENTIAL_ENDED_CODE;
}

/**
 * The SQLSTATE `wsvc_expect_receivers` (migration 027, PostgreSQL) raises when a workspace's receivers' token is not
 * the one a write whose event's insert was deferred expected: the outbox runs that write again, reading them afresh.
 */
export const RECEIVERS_MOVED_CODE = 'WK409';
export function isReceiversMoved(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === RECEIVERS_MOVED_CODE;
}
