import { type Kysely, sql } from 'kysely';
import type { Storage } from './database.js';
import { migrateToLatest } from './migrate.js';

export interface CopyResult {
  tables: { table: string; rows: number }[];
}

/** Tables of a SQLite database in an order where every row's foreign keys are copied before it. */
async function tablesInDependencyOrder(db: Kysely<unknown>): Promise<string[]> {
  const names = (
    await sql<{ name: string }>`select name from sqlite_master where type = 'table'
      and name not like 'sqlite_%' and name not like 'kysely_%' order by name`.execute(db)
  ).rows.map((r) => r.name);
  const deps = new Map<string, string[]>();
  for (const name of names) {
    const fks = await sql<{ table: string }>`select "table" from pragma_foreign_key_list(${name})`.execute(db);
    deps.set(
      name,
      fks.rows.map((r) => r.table).filter((t) => t !== name),
    );
  }
  const out: string[] = [];
  const visit = (n: string, path: Set<string>) => {
    if (out.includes(n) || path.has(n)) return;
    path.add(n);
    for (const d of deps.get(n) ?? []) visit(d, path);
    out.push(n);
  };
  for (const n of names) visit(n, new Set());
  return out;
}

/**
 * Copies every table of a SQLite database into a PostgreSQL one (docs/operations.md#moving-from-sqlite-to-postgresql: moving from a SQLite
 * start to PostgreSQL). Both are migrated to the latest schema first; the target must be empty
 * (it refuses otherwise, so a second run never duplicates or mixes data). Rows go in batches,
 * parents before children, in one target transaction: a failed copy leaves the target empty.
 */
export async function copySqliteToPostgres(
  from: Storage,
  to: Storage,
  opts: {
    batchRows?: number;
    log?: (msg: string) => void;
    /** Called after every batch with the rows copied so far and the rows to copy in all. */
    progress?: (copied: number, total: number) => void;
  } = {},
): Promise<CopyResult> {
  if (from.dialect.name !== 'sqlite' || to.dialect.name !== 'postgres') {
    throw new Error('db copy goes from a sqlite: database to a postgres:// one');
  }
  await migrateToLatest(from.db, from.dialect);
  await migrateToLatest(to.db, to.dialect);
  const src = from.db as unknown as Kysely<unknown>;
  const dst = to.db as unknown as Kysely<unknown>;
  const tables = await tablesInDependencyOrder(src);
  for (const table of tables) {
    const { rows } = await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(dst);
    if (Number(rows[0]?.n) > 0) {
      throw new Error(`target is not empty (table ${table} has ${rows[0]?.n} rows); copy only into a new database`);
    }
  }
  let total = 0;
  for (const table of tables) {
    const { rows } = await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(src);
    total += Number(rows[0]?.n ?? 0);
  }
  let copiedAll = 0;
  opts.progress?.(0, total);
  const result: CopyResult = { tables: [] };
  await dst.transaction().execute(async (trx) => {
    for (const table of tables) {
      let copied = 0;
      let lastRowid = -1;
      for (;;) {
        const batch = (
          await sql<Record<string, unknown>>`select rowid as __rowid, * from ${sql.table(table)}
            where rowid > ${lastRowid} order by rowid limit ${opts.batchRows ?? 500}`.execute(src)
        ).rows;
        if (batch.length === 0) break;
        lastRowid = Number(batch[batch.length - 1]?.__rowid);
        const values = batch.map(({ __rowid, ...row }) => row);
        await trx
          .insertInto(table as never)
          .values(values as never)
          .execute();
        copied += batch.length;
        copiedAll += batch.length;
        opts.progress?.(copiedAll, Math.max(total, copiedAll));
      }
      result.tables.push({ table, rows: copied });
      opts.log?.(`${table}: ${copied} rows`);
    }
  });
  return result;
}
