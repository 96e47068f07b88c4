import { type RawBuilder, sql } from 'kysely';
import type { Db, DialectName } from './dialect.js';

/**
 * Deletes at most `limit` rows of `table` that match `where`, by the row's physical id (SQLite's `rowid`,
 * PostgreSQL's `ctid`), so a table without a one-column key is deleted in bounded batches too. Returns the rows
 * deleted. The caller names the table from code (never from input).
 */
export async function deleteBounded(
  db: Db,
  dialect: DialectName,
  table: string,
  where: RawBuilder<unknown>,
  limit: number,
): Promise<number> {
  const rid = sql.raw(dialect === 'postgres' ? 'ctid' : 'rowid');
  const t = sql.table(table);
  const r = await sql`delete from ${t} where ${rid} in (select ${rid} from ${t} where ${where} limit ${limit})`.execute(
    db,
  );
  return Number(r.numAffectedRows ?? 0);
}
