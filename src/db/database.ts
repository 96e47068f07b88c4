import type { Db, Dialect } from './dialect.js';
import { listenPostgres, openPostgres, probePostgres, withTimeout } from './postgres.js';
import { openSqlite } from './sqlite.js';

export interface Storage {
  db: Db;
  dialect: Dialect;
  /** Cheap round trip for /readyz; rejects (code `ETIMEDOUT`) when there is no answer within `timeoutMs`. */
  ping(timeoutMs?: number): Promise<void>;
  /**
   * One round trip on a fresh connection within `timeoutMs`, for the breaker (src/db/breaker.ts);
   * absent where the database is a local file (SQLite).
   */
  probe?(timeoutMs: number): Promise<void>;
  /**
   * Calls `onNotify` for every notification on `channel` from any process (PostgreSQL LISTEN,
   * reconnecting by itself); absent on SQLite. Resolves to a function that stops listening.
   */
  listen?(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface StorageOptions {
  url: string;
  poolSize?: number;
  statementTimeoutMs?: number;
  queryTimeoutMs?: number;
  connectTimeoutMs?: number;
  schema?: string;
}

/** Opens the configured database (DATABASE_URL, pool size, statement, query and connect timeouts); `poolSize` overrides. */
export function openStorageFromConfig(
  config: {
    DATABASE_URL: string;
    DATABASE_POOL_SIZE: number;
    DATABASE_STATEMENT_TIMEOUT_MS: number;
    DATABASE_QUERY_TIMEOUT_MS: number;
    DATABASE_CONNECT_TIMEOUT_MS: number;
  },
  opts: { poolSize?: number } = {},
): Storage {
  return openStorage({
    url: config.DATABASE_URL,
    poolSize: opts.poolSize ?? config.DATABASE_POOL_SIZE,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
  });
}

/** Opens the database named by a DATABASE_URL (`sqlite:<path>`, `sqlite::memory:`, `postgres://…`). */
export function openStorage(opts: StorageOptions): Storage {
  const { url } = opts;
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    const { db, dialect, raw } = openSqlite(path);
    return {
      db,
      dialect,
      async ping() {
        raw.prepare('select 1').get();
      },
      async close() {
        await db.destroy();
      },
    };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const { db, dialect, pool } = openPostgres({
      url,
      poolSize: opts.poolSize ?? 10,
      statementTimeoutMs: opts.statementTimeoutMs ?? 5000,
      // No client-side bound unless asked for (migrations and `db copy` may run long).
      queryTimeoutMs: opts.queryTimeoutMs ?? 0,
      connectTimeoutMs: opts.connectTimeoutMs ?? 5000,
      schema: opts.schema,
    });
    return {
      db,
      dialect,
      probe: (timeoutMs) => probePostgres(url, opts.schema, timeoutMs),
      async ping(timeoutMs = 1000) {
        await withTimeout(pool.query('select 1'), timeoutMs);
      },
      listen: (channel, onNotify) => listenPostgres(url, channel, onNotify),
      async close() {
        await db.destroy();
      },
    };
  }
  throw new Error(`Unsupported DATABASE_URL: ${url}`);
}
