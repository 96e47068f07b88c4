import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import type { Db, Dialect } from './dialect.js';
import type { Database } from './types.js';

/** Opens a SQLite file (or `:memory:`) with the pragmas of D20. */
export function openSqlite(path: string): { db: Db; dialect: Dialect; raw: SqliteDatabase.Database } {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const raw = new SqliteDatabase(path);
  raw.pragma('journal_mode = WAL');
  // D20: an acknowledged write survives a crash of the process or of the machine.
  raw.pragma('synchronous = FULL');
  raw.pragma('busy_timeout = 5000');
  raw.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) });
  return { db, dialect: sqliteDialect, raw };
}

export const sqliteDialect: Dialect = {
  name: 'sqlite',
  types: { timestamp: 'text', json: 'text' },
  rowLocks: false,
  async writeTransaction(db, fn) {
    // Kysely's transaction() issues a deferred BEGIN; a deferred transaction that reads and then
    // writes can fail with SQLITE_BUSY when another process (the CLI) wrote in between. BEGIN
    // IMMEDIATE takes the write lock up front and waits on busy_timeout instead.
    return db.connection().execute(async (conn) => {
      await sql`begin immediate`.execute(conn);
      try {
        const result = await fn(conn);
        await sql`commit`.execute(conn);
        return result;
      } catch (err) {
        await sql`rollback`.execute(conn).catch(() => {});
        throw err;
      }
    });
  },
  isUniqueViolation(err) {
    const code = (err as { code?: string } | null)?.code;
    return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
  },
  isConnectionError(err) {
    const code = (err as { code?: string } | null)?.code;
    return code === 'SQLITE_CANTOPEN' || code === 'SQLITE_IOERR';
  },
};

/**
 * Issue 5: Kysely's SQLite driver calls `prepare(sql)` for every query; re-preparing cost ~12 % of CPU on
 * GET /v1/resources/{id} (--cpu-prof). better-sqlite3 is synchronous, so one cached Statement per SQL
 * text is safe to reuse. Only Kysely's view of the connection is wrapped; `raw` is unchanged.
 */
function withStatementCache(raw: SqliteDatabase.Database): SqliteDatabase.Database {
  const cache = new Map<string, SqliteDatabase.Statement>();
  const prepare = raw.prepare.bind(raw);
  return new Proxy(raw, {
    get(target, prop, receiver) {
      if (prop === 'prepare') {
        return (source: string) => {
          let stmt = cache.get(source);
          if (!stmt) {
            stmt = prepare(source);
            if (cache.size < 500) cache.set(source, stmt);
          }
          return stmt;
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
