import type { Compilable, CompiledQuery, QueryId, QueryResult, RootOperationNode } from 'kysely';
import { type Db, dialectOf, later } from './dialect.js';

const SENTINEL = '\u0000wsvc:';

/**
 * Stands for a parameter while a prepared query is built: `$('id')` names a key of the values `P`
 * that `execute` binds. Typed as whatever the builder expects at that position.
 */
// biome-ignore lint/suspicious/noExplicitAny: a placeholder must fit any value position of the builder
export type Param<P> = (name: keyof P & string) => any;

interface Compiled {
  sql: string;
  query: RootOperationNode;
  queryId: QueryId;
  /** Per compiled parameter: the name of the value to bind, or a constant wrapped in an object. */
  binds: (string | { value: unknown })[];
  /** A SELECT: may run as a named prepared statement where the dialect has them. */
  reads: boolean;
}

/** Names of prepared statements: one per `prepared()` query, the same for every connection. */
let statements = 0;

/**
 * Performance (docs/performance.md#queries-built-once): a Kysely query built and compiled once per dialect, then run with new values. On the hot
 * paths, building and compiling cost more than SQLite's own work (--cpu-prof: ~25 % of GET by id in
 * Kysely's builder, compiler and freeze). `build` must pass each `$('name')` as a value (a bound
 * parameter), never into SQL text; the SQL stays Kysely's, so both dialects keep working.
 */
export function prepared<P extends object, R>(build: (db: Db, $: Param<P>) => Compilable<R>) {
  const handle = {};
  // One SQL text per dialect and query, so one name per query is unique on any connection.
  const name = `wsvc_q${++statements}`;
  // Compiled once per connection, kept in its Dialect (shared by the database and its transactions).
  const compile = (db: Db): Compiled => {
    const cache = dialectOf(db).preparedQueries;
    let c = cache.get(handle) as Compiled | undefined;
    if (!c) {
      const q = build(db, (name) => SENTINEL + name).compile();
      const binds = q.parameters.map((p) =>
        typeof p === 'string' && p.startsWith(SENTINEL) ? p.slice(SENTINEL.length) : { value: p },
      );
      c = { sql: q.sql, query: q.query, queryId: q.queryId, binds, reads: q.query.kind === 'SelectQueryNode' };
      cache.set(handle, c);
      dialectOf(db).statementNames?.set(c.sql, name);
    }
    return c;
  };
  return {
    /** Runs the query on `db` (a database, transaction or connection) with `values` bound by name. */
    async execute(db: Db, values: P): Promise<QueryResult<R>> {
      const c = compile(db);
      const named = values as Record<string, unknown>;
      const parameters = c.binds.map((b) => (typeof b === 'string' ? named[b] : b.value));
      const dialect = dialectOf(db);
      const rows = dialect.directReader?.(c.sql, parameters);
      if (rows) return { rows: rows as R[] };
      if (!c.reads) {
        const written = dialect.directWriter?.(c.sql, parameters);
        if (written) return written as QueryResult<R>;
      }
      // Outside a transaction only: a transaction's reads must run on its own connection.
      if (c.reads && dialect.namedReader && !db.isTransaction) {
        return { rows: (await dialect.namedReader(name, c.sql, parameters)) as R[] };
      }
      const compiled: CompiledQuery<R> = { sql: c.sql, query: c.query, queryId: c.queryId, parameters };
      return db.executeQuery<R>(compiled);
    },
    /**
     * A write whose result is not needed: runs now, or is sent just before the transaction's next statement or with its
     * COMMIT where the dialect defers (`later` in dialect.ts; PostgreSQL, as its named statement).
     */
    async later(db: Db, values: P): Promise<void> {
      if (!(db.isTransaction && dialectOf(db).defers)) {
        await this.execute(db, values);
        return;
      }
      const c = compile(db);
      const named = values as Record<string, unknown>;
      const parameters = c.binds.map((b) => (typeof b === 'string' ? named[b] : b.value));
      await later(db, { sql: c.sql, query: c.query, queryId: c.queryId, parameters });
    },
  };
}
