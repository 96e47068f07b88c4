import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteDialect } from 'kysely';
import { carrying, type Db, type Dialect } from './dialect.js';
import type { Database } from './types.js';

/** Opens a SQLite file (or `:memory:`) with the durability pragmas; its Dialect is this connection's, `raw` the connection with its statement cache. */
export function openSqlite(path: string): { db: Db; dialect: Dialect; raw: SqliteDatabase.Database } {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const raw = new SqliteDatabase(path);
  // exec, not raw.pragma(): that prepares a Statement of its own each time (see neverCollected).
  // docs/api.md#deployment: an acknowledged write survives a crash of the process or of the machine (synchronous = FULL).
  // Performance (docs/performance.md#sqlite-group-commit): temp_store = MEMORY keeps the journals of the write
  // queue's savepoints (and of statements) in memory, not in temporary files: each page a write changes inside its
  // savepoint was copied to such a file (system CPU on every write of a batch). They only undo a savepoint inside an
  // open transaction, so a crash loses nothing the WAL keeps.
  raw.exec(
    'pragma journal_mode = WAL; pragma synchronous = FULL; pragma busy_timeout = 5000; pragma foreign_keys = ON; pragma temp_store = MEMORY',
  );
  const cached = withStatementCache(raw);
  // Performance (docs/performance.md#sqlite-reads-without-kyselys-executor): statements of the direct reader by SQL text (null: not a read), read as arrays (see rowReader);
  // one per SQL text and never collected, like the statement cache (see neverCollected).
  const readers = new Map<string, RowReader | null>();
  neverCollected.add(readers);
  const queue: WriteQueue = { pending: [], scheduled: false, keyChanges: 0 };
  // Performance (docs/performance.md#the-key-cache-and-its-epochs; see keysEpoch): this process's write batches that may change keys, and commits by any other connection.
  const dataVersion = cached.prepare('pragma data_version').pluck();
  const dialect: Dialect = {
    name: 'sqlite',
    types: { timestamp: 'text', json: 'text' },
    rowLocks: false,
    serialWrites: true,
    async holdShared() {},
    async holdExclusive() {},
    async tryHoldExclusive() {
      return true;
    },
    writeTransaction(db, fn, opts) {
      return groupCommit(db, queue, fn, opts?.keepsKeys === true);
    },
    isUniqueViolation(err) {
      const code = codeOf(err);
      return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
    },
    // A file on this machine: busy perhaps (isUnavailable), never unreachable; no breaker.
    isUnreachable: () => false,
    isUnavailable(err) {
      const code = codeOf(err);
      // BUSY: another process held the write lock past busy_timeout.
      return code === 'SQLITE_CANTOPEN' || code === 'SQLITE_IOERR' || code?.startsWith('SQLITE_BUSY') === true;
    },
    keysEpoch: () => (dataVersion.get() as number) * 1e9 + queue.keyChanges,
    // Outside a transaction every statement is atomic, so a read needs no lock: it sees committed data only.
    async secureErase(fn) {
      // A flag of the connection, which every write of this process shares: the writes queued beside the
      // erasure's are zeroed too, which costs them nothing but I/O.
      raw.exec('pragma secure_delete = on');
      let out: Awaited<ReturnType<typeof fn>>;
      try {
        out = await fn();
      } finally {
        raw.exec('pragma secure_delete = off');
      }
      // Copies a page split or an update left earlier in a page's unused space are no row's: only rebuilding the
      // file drops them. Then the WAL, which holds the rebuilt pages, is moved into the file and emptied.
      // A write of this process under way (a server) keeps VACUUM from running: what the erasure itself deleted is
      // zeroed all the same, and `wsvc users erase` of the same email later rebuilds the file.
      if (!raw.inTransaction) {
        try {
          raw.exec('vacuum');
        } catch {}
      }
      raw.exec('pragma wal_checkpoint(TRUNCATE)');
      return out;
    },
    yieldToOtherWriters(tookMs) {
      return new Promise((resolve) => setTimeout(resolve, Math.min(100, Math.max(1, tookMs))));
    },
    directReader(text, parameters) {
      if (raw.inTransaction) return undefined;
      let reader = readers.get(text);
      if (reader === undefined) {
        // Kysely's cached statement tells whether it reads; a reader gets a second one of its own, in raw mode.
        reader = cached.prepare(text).reader ? rowReader(raw.prepare(text)) : null;
        readers.set(text, reader);
      }
      return reader === null ? undefined : reader(parameters);
    },
    // Only a write of the batch the write queue runs can find a transaction open: every write goes through it.
    directWriter(text, parameters) {
      if (!raw.inTransaction) return undefined;
      const stmt = cached.prepare(text);
      if (stmt.reader) return { rows: stmt.all(parameters as unknown[]) };
      const info = stmt.run(parameters as unknown[]);
      return { rows: [], numAffectedRows: BigInt(info.changes), insertId: BigInt(info.lastInsertRowid) };
    },
    preparedQueries: new Map(),
  };
  const db = new Kysely<Database>({ dialect: carrying(new SqliteDialect({ database: cached }), dialect) });
  return { db, dialect, raw: cached };
}

type RowReader = (parameters: readonly unknown[]) => unknown[];

/**
 * Performance (docs/performance.md#sqlite-reads-without-kyselys-executor): better-sqlite3 builds a row object property by property; reading arrays and turning them
 * into objects with one literal per statement (a stable shape) costs a third less: a list of 20
 * resources 57 → 37 µs, a primary-key read 4.9 → 3.8 µs (tight loop). The literal is generated once
 * per statement from its column names (JSON-quoted; a repeated name keeps its last value, as in
 * better-sqlite3's objects).
 */
function rowReader(stmt: SqliteDatabase.Statement): RowReader {
  const fields = stmt.columns().map((c, i) => `${JSON.stringify(c.name)}: a[${i}]`);
  const toRow = new Function('a', `return { ${fields.join(', ')} };`) as (a: unknown[]) => unknown;
  stmt.raw(true);
  return (parameters) => {
    const rows = stmt.all(parameters as unknown[]) as unknown[][];
    const out = new Array<unknown>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = toRow(rows[i] as unknown[]);
    return out;
  };
}

function codeOf(err: unknown): string | undefined {
  return (err as { code?: string } | null)?.code;
}

/**
 * Every better-sqlite3 object this process creates stays referenced until the process exits, and
 * Node frees them then. Node 24.19 and later compile a check into native addons built on
 * node::ObjectWrap, as better-sqlite3 up to 12 is: a wrapper freed by a garbage collection that V8
 * runs from a background task (outside any JavaScript context) aborts the process with "Assertion
 * failed: (env) != nullptr" in RemoveEnvironmentCleanupHook, from Statement::~Statement. So every
 * Statement comes from its connection's cache (one per SQL text: the query builders produce a
 * bounded set of texts), and a closed connection and its cache are kept too (tests open many).
 */
const neverCollected = new Set<object>();

/**
 * Performance (docs/performance.md#queries-built-once): Kysely's SQLite driver calls `prepare(sql)` for every query; re-preparing cost ~12 % of CPU on
 * GET /v1/resources/{id} (--cpu-prof). better-sqlite3 is synchronous, so one cached Statement per SQL
 * text is safe to reuse. The cache has no bound on purpose: a Statement must never be left to the
 * garbage collector (see neverCollected).
 */
function withStatementCache(raw: SqliteDatabase.Database): SqliteDatabase.Database {
  const cache = new Map<string, SqliteDatabase.Statement>();
  neverCollected.add(raw).add(cache);
  const prepare = raw.prepare.bind(raw);
  return new Proxy(raw, {
    get(target, prop, receiver) {
      if (prop === 'prepare') {
        return (source: string) => {
          let stmt = cache.get(source);
          if (!stmt) {
            stmt = prepare(source);
            cache.set(source, stmt);
          }
          return stmt;
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

interface PendingWrite {
  fn: (trx: Db) => Promise<unknown>;
  keepsKeys: boolean;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}
interface WriteQueue {
  pending: PendingWrite[];
  scheduled: boolean;
  /** Write batches run by this process that may have changed API keys or users (see keysEpoch). */
  keyChanges: number;
}

const MAX_BATCH = 64;
const q = (text: string) => CompiledQuery.raw(text);
const BEGIN = q('begin immediate');
const COMMIT = q('commit');
const ROLLBACK = q('rollback');
const SAVEPOINT = q('savepoint w');
const RELEASE = q('release w');
const ROLLBACK_TO = q('rollback to w');

/**
 * Performance (docs/performance.md#sqlite-group-commit): group commit under docs/api.md#deployment: write transactions that arrive together (one turn of the event loop)
 * run one after another inside one SQLite transaction, each in its own savepoint, and the batch commits
 * once, with one fsync (synchronous=FULL). Each caller is answered only after that COMMIT returned, so an
 * acknowledged write is on disk, as before; a write that throws rolls back to its savepoint and leaves the
 * others alone. Order is arrival order, so a key revoked by an earlier write in the batch is seen by the
 * later ones (docs/api.md#keys-scopes-and-roles). BEGIN IMMEDIATE takes the write lock up front: a deferred transaction that reads and
 * then writes can fail with SQLITE_BUSY when another process (the CLI) wrote in between.
 */
function groupCommit<T>(db: Db, state: WriteQueue, fn: (trx: Db) => Promise<T>, keepsKeys: boolean): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    state.pending.push({ fn, keepsKeys, resolve: resolve as (v: unknown) => void, reject });
    if (state.scheduled) return;
    state.scheduled = true;
    // setImmediate runs after the poll phase: every request read in this turn has queued its write.
    setImmediate(() => void drain(db, state));
  });
}

async function drain(db: Db, state: WriteQueue): Promise<void> {
  while (state.pending.length > 0) {
    const batch = state.pending.splice(0, MAX_BATCH);
    await db
      .connection()
      .execute((conn) => runBatch(conn, batch, state))
      .catch((err: unknown) => {
        state.keyChanges++;
        for (const w of batch) w.reject(err);
      });
  }
  state.scheduled = false;
}

async function runBatch(conn: Db, batch: PendingWrite[], state: WriteQueue): Promise<void> {
  const exec = (c: CompiledQuery) => conn.executeQuery(c);
  await exec(BEGIN);
  const outcomes: { ok: boolean; value: unknown }[] = [];
  try {
    if (batch.length === 1) {
      outcomes.push({ ok: true, value: await (batch[0] as PendingWrite).fn(conn) });
    } else {
      for (const w of batch) {
        await exec(SAVEPOINT);
        try {
          const value = await w.fn(conn);
          await exec(RELEASE);
          outcomes.push({ ok: true, value });
        } catch (err) {
          await exec(ROLLBACK_TO);
          await exec(RELEASE);
          outcomes.push({ ok: false, value: err });
        }
      }
    }
    await exec(COMMIT);
    if (!batch.every((w) => w.keepsKeys)) state.keyChanges++;
  } catch (err) {
    state.keyChanges++;
    await exec(ROLLBACK).catch(() => {});
    for (const [i, w] of batch.entries()) {
      const o = outcomes[i];
      w.reject(o && !o.ok ? o.value : err);
    }
    return;
  }
  for (const [i, w] of batch.entries()) {
    const o = outcomes[i] as { ok: boolean; value: unknown };
    if (o.ok) w.resolve(o.value);
    else w.reject(o.value);
  }
}
