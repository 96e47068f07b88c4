import type { CompiledQuery, DatabaseConnection, Driver, QueryResult, TransactionSettings } from 'kysely';
import pg from 'pg';
import { DEFER_MARKER } from './dialect.js';

/** pg's error for a query that outlived `query_timeout`: the query is still on the wire, its connection lost. */
export const READ_TIMEOUT = 'Query read timeout';
/**
 * A named statement prepared before a migration changed its table's columns (a rolling upgrade: the
 * previous version's processes still run while `wsvc migrate` adds a column) fails with this until its
 * connection is replaced: the connection is destroyed like a timed-out one, and the request answered 503
 * (isUnavailable), so its retry runs on a fresh connection that prepares the statement again.
 */
export const STALE_STATEMENT = /cached plan must not change result type/;

/**
 * Kysely's Driver over a pg pool, through pg's public calls only (`pool.connect`, `client.query(text)`,
 * `client.query(text, values)`, `client.query({ name, text, values })`, `client.release(err)`).
 * Each pooled client has one PgConnection for its life, which keeps what belongs to that server connection.
 */
export class PgDriver implements Driver {
  /** The connection of each client the pool holds; a client's entry goes when the pool removes the client. */
  readonly connections = new Map<pg.PoolClient, PgConnection>();

  /** `statementNames`: SQL texts of `prepared()` queries and their statement names (Dialect.statementNames). */
  constructor(
    private readonly pool: pg.Pool,
    private readonly statementNames: ReadonlyMap<string, string>,
  ) {
    pool.on('remove', (client) => this.connections.delete(client as pg.PoolClient));
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<PgConnection> {
    const client = await this.pool.connect();
    let connection = this.connections.get(client);
    if (!connection) {
      connection = new PgConnection(client, this.statementNames);
      this.connections.set(client, connection);
    }
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    let begin = 'begin';
    if (settings.isolationLevel || settings.accessMode) {
      begin = 'start transaction';
      if (settings.isolationLevel) begin += ` isolation level ${settings.isolationLevel}`;
      if (settings.accessMode) begin += ` ${settings.accessMode}`;
    }
    (connection as PgConnection).begin(begin);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as PgConnection).commit();
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return (connection as PgConnection).rollback();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as PgConnection).release();
  }

  async destroy(): Promise<void> {
    await this.pool.end();
    this.connections.clear();
  }
}

/**
 * One pooled pg client as Kysely's connection:
 * - Performance (docs/performance.md#queries-built-once): a query whose SQL text is a `prepared()` query's runs as
 *   that query's named prepared statement (`client.query({ name, text, values })`; pg prepares it once per connection).
 * - Performance (docs/performance.md, "A write in one round trip on PostgreSQL"): in a transaction, its BEGIN
 *   and the statements passed to `later` (dialect.ts) are held and sent, in order and as one simple-query string,
 *   with the transaction's next statement (in the same string when that one too can be written with literals, else
 *   just before it) or with its COMMIT: a transaction whose statements are all deferred is one round trip. A
 *   `prepared()` query in such a string is `EXECUTE` of a statement this connection prepared with SQL's PREPARE
 *   (listed in `prepared`), its values written as literals.
 * - A connection whose query outlived the client-side `query_timeout` (the query is still on the wire, and the
 *   next one would queue behind it) or met a stale prepared statement is `broken`: nothing more is sent on it,
 *   and its release makes the pool destroy it (`client.release(err)`), so the pool opens a fresh one.
 */
export class PgConnection implements DatabaseConnection {
  /**
   * Names of the statements prepared on this server connection with SQL's PREPARE: a `prepared()` query's name with
   * SQL_SUFFIX (pg tracks its own named statements of the same query, under the plain name). A PREPARE outlives a
   * ROLLBACK; the set lives as long as the connection.
   */
  readonly prepared = new Set<string>();
  /** Set when the connection must not be used again: its release destroys it. */
  broken: Error | undefined;
  /** none: no transaction; held: BEGIN not sent yet; sent: BEGIN sent. */
  private tx: 'none' | 'held' | 'sent' = 'none';
  /** What the transaction's next statement or COMMIT carries: its BEGIN while held, then the deferred statements. */
  private held: string[] = [];

  constructor(
    readonly client: pg.PoolClient,
    private readonly statementNames: ReadonlyMap<string, string>,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (query.sql === DEFER_MARKER) {
      const [text, values] = query.parameters as [string, readonly unknown[]];
      if (this.tx === 'none') return resultOf(await this.run(text, values));
      return resultOf(await this.defer(text, values));
    }
    if (this.tx === 'none') return resultOf(await this.run(query.sql, query.parameters));
    return resultOf(await this.after(this.takeHeld(), query.sql, query.parameters));
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered (Kysely's PostgresDialect needs pg-cursor for it)
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not supported on this connection');
  }

  /** Holds `begin` (BEGIN or START TRANSACTION …): it travels with the transaction's first statement or COMMIT. */
  begin(begin: string): void {
    this.tx = 'held';
    this.held = [begin];
  }

  /** Sends what is held with COMMIT; nothing at all when the transaction ran nothing. */
  async commit(): Promise<void> {
    if (this.tx === 'held' && this.held.length === 1) {
      this.reset();
      return;
    }
    const before = this.takeHeld();
    // On an error the transaction is left open and aborted (the string stopped there): Kysely's ROLLBACK follows.
    await this.send(before === undefined ? 'commit' : `${before};\ncommit`);
    this.reset();
  }

  /**
   * Sends ROLLBACK if BEGIN was sent. A connection that cannot take it (broken, or the ROLLBACK fails) is left to be
   * destroyed at its release, which ends the transaction on the server; the transaction's own error is what Kysely throws.
   */
  async rollback(): Promise<void> {
    const sent = this.tx === 'sent';
    this.reset();
    if (!sent || this.broken) return;
    try {
      await this.send('rollback');
    } catch (err) {
      this.broken ??= err as Error;
    }
  }

  /** Back to the pool; a broken connection is destroyed by it. */
  release(): void {
    this.reset();
    if (this.broken) this.client.release(this.broken);
    else this.client.release();
  }

  private reset(): void {
    this.tx = 'none';
    this.held = [];
  }

  /** Takes what must be sent before the transaction's next statement (BEGIN if held, the deferred statements). */
  private takeHeld(): string | undefined {
    this.tx = 'sent';
    const parts = this.held;
    this.held = [];
    return parts.length > 0 ? parts.join(';\n') : undefined;
  }

  /** One query to pg; an error that leaves the connection unusable marks it broken. */
  private send(query: string | pg.QueryConfig, values?: unknown[]): Promise<pg.QueryResult | pg.QueryResult[]> {
    if (this.broken) return Promise.reject(this.broken);
    const result = (values === undefined ? this.client.query(query) : this.client.query(query, values)) as Promise<
      pg.QueryResult | pg.QueryResult[]
    >;
    return result.catch((err: Error) => {
      if (err?.message === READ_TIMEOUT || STALE_STATEMENT.test(err?.message ?? '')) this.broken ??= err;
      throw err;
    });
  }

  /** The query with bound values: as its named statement when it is a `prepared()` query. */
  private run(text: string, values: readonly unknown[]) {
    const name = this.statementNames.get(text);
    return name === undefined ? this.send(text, [...values]) : this.send({ name, text, values: [...values] });
  }

  /**
   * Holds a deferred statement as it will be sent (PREPAREd first on this connection if it is a `prepared()` query
   * not yet prepared here: that PREPARE goes at once, ahead of anything sent after it). One that cannot be written
   * with literals is sent now, after what is held.
   */
  private async defer(text: string, values: readonly unknown[]) {
    const inline = this.inlined(text, values);
    if (inline === undefined) return this.after(this.takeHeld(), text, values);
    this.held.push(inline.sql);
    await inline.ready;
    return noRows('SELECT');
  }

  /**
   * Sends what is held (`before`), then the statement: in the same simple-query string when it can be written inline,
   * its result (the string's last) shaped as the extended protocol's, both parsed by the same type parsers as text;
   * else as a round trip of its own first. pg sends one client's queries in order, so nothing sent later overtakes them.
   */
  private async after(before: string | undefined, text: string, values: readonly unknown[]) {
    if (before === undefined) return this.run(text, values);
    const inline = this.inlined(text, values);
    if (inline === undefined) {
      const sent = this.send(before);
      const result = this.run(text, values);
      return (await Promise.all([sent, result]))[1];
    }
    const result = this.send(`${before};\n${inline.sql}`);
    const [, r] = await Promise.all([inline.ready, result]);
    return Array.isArray(r) ? (r[r.length - 1] as pg.QueryResult) : r;
  }

  /**
   * The statement with its values as literals (`execute name(…)` if it is a `prepared()` query, with the PREPARE it
   * needs on this connection sent now as `ready`), or undefined if it cannot be written so: a value with no literal
   * form, or text where a `$n` might not be a parameter (a quote, a dollar quote) or with a `;`.
   */
  private inlined(text: string, values: readonly unknown[]): { sql: string; ready?: Promise<unknown> } | undefined {
    let args: string[];
    try {
      args = values.map(literal);
    } catch {
      return undefined;
    }
    const name = this.statementNames.get(text);
    if (name === undefined) {
      if (/[';]|\$(?!\d)/.test(text)) return undefined;
      return { sql: text.replace(/\$(\d+)/g, (_, i: string) => args[Number(i) - 1] ?? 'null') };
    }
    const sqlName = name + SQL_SUFFIX;
    const sql = args.length > 0 ? `execute ${sqlName}(${args.join(', ')})` : `execute ${sqlName}`;
    if (this.prepared.has(sqlName)) return { sql };
    // Marked at once, so a statement sent meanwhile does not PREPARE it again; pg sends this PREPARE first.
    this.prepared.add(sqlName);
    const ready = this.send(`prepare ${sqlName} as ${text}`).catch((err: unknown) => {
      this.prepared.delete(sqlName);
      throw err;
    });
    return { sql, ready };
  }
}

/**
 * Appended to a `prepared()` query's name for the statement this driver prepares with SQL's PREPARE: pg prepares
 * the same query under its plain name when it runs it with bound values, and keeps its own list of those.
 */
const SQL_SUFFIX = '_sql';

/** pg's result as Kysely's. */
function resultOf<R>(r: pg.QueryResult | pg.QueryResult[] | { command: string; rowCount: number; rows: [] }) {
  const { command, rowCount, rows } = Array.isArray(r) ? (r[r.length - 1] as pg.QueryResult) : r;
  const changes = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
  return { numAffectedRows: changes ? BigInt(rowCount ?? 0) : undefined, rows: (rows ?? []) as R[] };
}

function noRows(command: string) {
  return { command, rowCount: 0, rows: [] as [] };
}

/** A value as a SQL literal for a deferred statement (pg's text form of it, quoted); throws for binary values. */
function literal(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return pg.escapeLiteral(v);
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return `'${String(v)}'`;
  if (v instanceof Date) return `'${v.toISOString()}'`;
  if (Array.isArray(v)) {
    const items = v.map((x) => {
      if (x === null || x === undefined) return 'NULL';
      if (typeof x === 'object') throw new Error('no literal for a nested array');
      return `"${String(x).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
    });
    return pg.escapeLiteral(`{${items.join(',')}}`);
  }
  if (Buffer.isBuffer(v) || ArrayBuffer.isView(v)) throw new Error('no literal for a binary value');
  return pg.escapeLiteral(JSON.stringify(v));
}
