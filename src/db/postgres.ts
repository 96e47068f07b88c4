import { Kysely, PostgresAdapter, PostgresQueryCompiler, sql } from 'kysely';
import pg from 'pg';
import { UnavailableError } from '../kernel/errors.js';
import { carrying, type Db, DELIVERY_CHANNEL, type Dialect, type KeyChangeAnnouncer } from './dialect.js';
import { PgDriver, STALE_STATEMENT } from './pg-driver.js';
import { OwnSchemaIntrospector } from './postgres-introspector.js';
import { type Param, prepared } from './prepared.js';
import type { Database } from './types.js';

const TIMESTAMPTZ_OID = 1184;

export interface PostgresOptions {
  url: string;
  poolSize: number;
  statementTimeoutMs: number;
  /**
   * Client-side bound on each query (0 = none): unlike `statement_timeout`, which runs on the
   * server, it also fires when the network is partitioned and no answer can arrive.
   */
  queryTimeoutMs: number;
  /** Bound on opening a connection, and on waiting for a free one in the pool. */
  connectTimeoutMs: number;
  /** Schema to use (tests run each suite in its own). */
  schema?: string;
}

/** Opens a PostgreSQL pool; timestamps come back as ISO 8601 strings, not Date objects. */
export function openPostgres(opts: PostgresOptions): { db: Db; dialect: Dialect; pool: pg.Pool } {
  const types = {
    getTypeParser(oid: number, format?: 'text' | 'binary') {
      if (oid === TIMESTAMPTZ_OID) return isoTimestamp;
      return pg.types.getTypeParser(oid, format);
    },
  };
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.poolSize,
    statement_timeout: opts.statementTimeoutMs || undefined,
    query_timeout: opts.queryTimeoutMs || undefined,
    connectionTimeoutMillis: opts.connectTimeoutMs,
    // A peer that vanished (host down, NAT entry dropped) is found by the kernel's probes instead
    // of a socket that waits forever; the query timeout covers a partition in the middle of a query.
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    types: types as pg.CustomTypesConfig,
    options: opts.schema ? `-c search_path=${opts.schema}` : undefined,
  });
  // An idle client that loses its connection emits 'error' on the pool; without a listener the
  // process would crash. The next query gets a fresh connection (or a 503 while the DB is down).
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    // A client checked out of the pool has no pool listener: its socket dying between queries would
    // emit an unhandled 'error' and kill the process (seen in test/storage/postgres-outage.test.ts). Its
    // pending queries are still rejected, and the pool drops the broken client on release.
    client.on('error', () => {});
  });
  const statementNames = new Map<string, string>();
  const dialect: Dialect = {
    ...postgresDialect,
    writeTransaction: (db, fn, options) =>
      announced(dialect.keyChanges, options?.keepsKeys, () => db.transaction().execute(fn)),
    preparedQueries: new Map(),
    namedReader: async (name, text, values) => (await pool.query({ name, text, values: [...values] })).rows,
    statementNames,
  };
  // Kysely's adapter and compiler; our driver (src/db/pg-driver.ts) and introspector.
  const driver = new PgDriver(pool, statementNames);
  const carried = carrying(
    {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => driver,
      createQueryCompiler: () => new PostgresQueryCompiler(),
      createIntrospector: (k) => new OwnSchemaIntrospector(k),
    },
    dialect,
  );
  const db = new Kysely<Database>({ dialect: carried });
  return { db, dialect, pool };
}

/** PostgreSQL's text form of a timestamptz in UTC to the millisecond, years 1000–9999: `2026-11-27 17:16:01.123+00`. */
const PG_UTC_TIMESTAMP = /^[1-9]\d{3}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?\+00$/;

/**
 * A timestamptz as an ISO 8601 string, as `new Date(v).toISOString()` gives it. Performance (docs/performance.md, "pg's row
 * parsing"): on a session in UTC (PostgreSQL's default here) the text is rearranged, fraction cut to milliseconds as
 * Date does, without parsing a Date: about 1.1 → 0.14 µs a value, two per resource. Any other form (another time zone,
 * a year outside 1000–9999, infinity) goes through Date.
 */
export function isoTimestamp(v: string): string {
  if (!PG_UTC_TIMESTAMP.test(v)) return new Date(v).toISOString();
  const end = v.length - 3;
  const ms = end === 19 ? '000' : `${v.slice(20, Math.min(end, 23))}00`.slice(0, 3);
  return `${v.slice(0, 10)}T${v.slice(11, 19)}.${ms}Z`;
}

/**
 * Runs a write that may change keys or users (not `keepsKeys`) between the two announcements of the
 * shared key-cache epoch (ARCHITECTURE.md, "Revocation"): before it begins, so no process serves a key from its
 * cache once the write may have committed; after it ends, so entries read while it ran are stale.
 * If the first cannot be made the write does not run (503): a revocation that committed unannounced
 * could be served from another process's cache.
 */
async function announced<T>(
  keyChanges: KeyChangeAnnouncer | undefined,
  keepsKeys: boolean | undefined,
  write: () => Promise<T>,
): Promise<T> {
  if (!keyChanges || keepsKeys) return write();
  try {
    await keyChanges.unsettle();
  } catch {
    throw new UnavailableError('Keys and users cannot change while the shared Redis does not answer; retry shortly.');
  }
  try {
    return await write();
  } finally {
    // A failure here leaves the epoch unsettled until it expires: no process caches keys meanwhile.
    await keyChanges.settle().catch(() => {});
  }
}

/** Idle time before the first TCP keep-alive probe on a PostgreSQL connection. */
const KEEPALIVE_DELAY_MS = 10_000;
const UNAVAILABLE_MESSAGE =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|not queryable/i;

/** Resolves as `promise` does, or rejects with a connection timeout after `ms`. */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code: 'ETIMEDOUT' })), ms);
  });
  promise.catch(() => {});
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08003',
  '08006',
  '57014', // query_canceled: DATABASE_STATEMENT_TIMEOUT_MS hit; the database is overloaded, retry
]);

/** Codes of CONNECTION_CODES that mean the server cannot be reached (not a statement that ran too long). */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08003',
  '08006',
]);

/**
 * One round trip on a fresh connection, bounded by `timeoutMs` (the breaker's probe, src/db/breaker.ts):
 * the pool's idle connections may be dead ends after a partition, a new one is not.
 */
export async function probePostgres(url: string, schema: string | undefined, timeoutMs: number): Promise<void> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    options: schema ? `-c search_path=${schema}` : undefined,
  });
  client.on('error', () => {});
  try {
    await withTimeout(
      client.connect().then(() => client.query('select 1')),
      timeoutMs,
    );
  } catch (err) {
    // pg's end() closes the socket at once while a query is unanswered; a connection attempt still pending is
    // given up by pg itself at `connectionTimeoutMillis`.
    client.end().catch(() => {});
    throw err;
  }
  await client.end().catch(() => {});
}

// Performance (docs/performance.md#queries-built-once): every write takes the shared locks, and a write that queues
// deliveries notifies; as `prepared()` queries they run as named statements (see PgConnection, pg-driver.ts).
const holdSharedQuery = prepared((db, $: Param<{ names: string[] }>) => ({
  compile: () =>
    sql`select pg_advisory_xact_lock_shared(hashtextextended(n, 0)) from unnest(${$('names')}::text[]) as n`.compile(
      db,
    ),
}));
const notifyQuery = prepared((db) => ({ compile: () => sql`select pg_notify(${DELIVERY_CHANNEL}, '')`.compile(db) }));

const postgresDialect: Omit<Dialect, 'preparedQueries'> = {
  name: 'postgres',
  async currentSchema(db) {
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
    return rows[0]?.schema ?? 'public';
  },
  types: { timestamp: 'timestamptz', json: 'jsonb' },
  rowLocks: true,
  serialWrites: false,
  defers: true,
  roundTrips: true,
  async holdShared(trx, names) {
    // One round trip; shared locks never wait for each other, only for a queued revocation.
    await holdSharedQuery.execute(trx, { names: [...names] });
  },
  async holdExclusive(trx, name) {
    await sql`select pg_advisory_xact_lock(hashtextextended(${name}, 0))`.execute(trx);
  },
  async tryHoldExclusive(trx, name) {
    const { rows } = await sql<{
      ok: boolean;
    }>`select pg_try_advisory_xact_lock(hashtextextended(${name}, 0)) as ok`.execute(trx);
    return rows[0]?.ok === true;
  },
  async notifyOnCommit(trx) {
    // NOTIFY inside a transaction is delivered when, and only if, it commits.
    await notifyQuery.later(trx, {});
  },
  writeTransaction(db, fn) {
    return db.transaction().execute(fn);
  },
  isUniqueViolation(err) {
    return (err as { code?: string } | null)?.code === '23505';
  },
  isUnreachable(err) {
    const e = err as { code?: string; message?: string } | null;
    if (!e) return false;
    if (e.code && UNREACHABLE_CODES.has(e.code)) return true;
    return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout/i.test(
      e.message ?? '',
    );
  },
  isUnavailable(err) {
    const e = err as { code?: string; message?: string } | null;
    if (!e) return false;
    if (e.code && CONNECTION_CODES.has(e.code)) return true;
    return UNAVAILABLE_MESSAGE.test(e.message ?? '') || STALE_STATEMENT.test(e.message ?? '');
  },
};

/**
 * LISTEN on `channel` with a dedicated connection; on a lost connection it reconnects every second
 * and calls `onNotify` once it is back (notifications sent meanwhile were lost, so look again).
 */
export async function listenPostgres(url: string, channel: string, onNotify: () => void): Promise<() => Promise<void>> {
  let client: pg.Client | null = null;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    // Keep-alive: a LISTEN connection is idle by nature, so a vanished peer is found by the probes.
    const c = new pg.Client({
      connectionString: url,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    });
    c.on('notification', () => onNotify());
    c.on('error', () => reconnect(c));
    c.on('end', () => reconnect(c));
    try {
      await c.connect();
      await c.query(`listen ${channel}`);
      client = c;
      onNotify();
    } catch {
      reconnect(c);
    }
  };
  const reconnect = (c: pg.Client) => {
    c.removeAllListeners('end');
    c.end().catch(() => {});
    if (client === c) client = null;
    if (stopped || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, 1000);
    retry.unref();
  };
  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retry);
    const c = client;
    client = null;
    c?.removeAllListeners('end');
    await c?.end().catch(() => {});
  };
}
