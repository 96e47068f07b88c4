import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { carrying, type Db, DELIVERY_CHANNEL, type Dialect } from './dialect.js';
import type { Database } from './types.js';

const TIMESTAMPTZ_OID = 1184;

export interface PostgresOptions {
  url: string;
  poolSize: number;
  statementTimeoutMs: number;
  /** Schema to use (tests run each suite in its own). */
  schema?: string;
}

/** Opens a PostgreSQL pool; timestamps come back as ISO 8601 strings, not Date objects. */
export function openPostgres(opts: PostgresOptions): { db: Db; dialect: Dialect; pool: pg.Pool } {
  const types = {
    getTypeParser(oid: number, format?: 'text' | 'binary') {
      if (oid === TIMESTAMPTZ_OID) return (v: string) => new Date(v).toISOString();
      return pg.types.getTypeParser(oid, format);
    },
  };
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.poolSize,
    statement_timeout: opts.statementTimeoutMs || undefined,
    connectionTimeoutMillis: 5000,
    types: types as pg.CustomTypesConfig,
    options: opts.schema ? `-c search_path=${opts.schema}` : undefined,
  });
  // An idle client that loses its connection emits 'error' on the pool; without a listener the
  // process would crash. The next query gets a fresh connection (or a 503 while the DB is down).
  pool.on('error', () => {});
  // A client checked out of the pool has no pool listener: its socket dying between queries would
  // emit an unhandled 'error' and kill the process (seen in test/postgres-outage.test.ts). Its
  // pending queries are still rejected, and the pool drops the broken client on release.
  pool.on('connect', (client) => client.on('error', () => {}));
  const dialect: Dialect = { ...postgresDialect, preparedQueries: new Map() };
  const db = new Kysely<Database>({ dialect: carrying(new PostgresDialect({ pool }), dialect) });
  return { db, dialect, pool };
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

const postgresDialect: Omit<Dialect, 'preparedQueries'> = {
  name: 'postgres',
  async currentSchema(db) {
    const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
    return rows[0]?.schema ?? 'public';
  },
  types: { timestamp: 'timestamptz', json: 'jsonb' },
  rowLocks: true,
  async holdShared(trx, names) {
    // One round trip; shared locks never wait for each other, only for a queued revocation.
    await sql`select pg_advisory_xact_lock_shared(hashtextextended(n, 0)) from unnest(${names}::text[]) as n`.execute(
      trx,
    );
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
    await sql`select pg_notify(${DELIVERY_CHANNEL}, '')`.execute(trx);
  },
  writeTransaction(db, fn) {
    return db.transaction().execute(fn);
  },
  isUniqueViolation(err) {
    return (err as { code?: string } | null)?.code === '23505';
  },
  isUnavailable(err) {
    const e = err as { code?: string; message?: string } | null;
    if (!e) return false;
    if (e.code && CONNECTION_CODES.has(e.code)) return true;
    return /Connection terminated|connection timeout|timeout exceeded when trying to connect/i.test(e.message ?? '');
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
    const c = new pg.Client({ connectionString: url });
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
