import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqlite } from './sqlite.js';

// Backends: sqlite — the SQLite driver's own group commit, on a file of its own
// Tier: quick

const path = join(tmpdir(), `wsvc-group-commit-${process.pid}.db`);
const { db, dialect, raw } = openSqlite(path);
afterAll(async () => {
  await db.destroy();
  for (const s of ['', '-wal', '-shm']) rmSync(path + s, { force: true });
});

describe('SQLite group commit (docs/performance.md#sqlite-group-commit)', () => {
  it('writes that arrive together commit together; a failing one rolls back alone', async () => {
    await sql`create table t (v integer primary key)`.execute(db);
    const results = await Promise.allSettled(
      [1, 2, 3, 4, 5].map((v) =>
        dialect.writeTransaction(db, async (trx) => {
          await sql`insert into t (v) values (${v})`.execute(trx);
          if (v === 3) throw new Error('boom');
          // A duplicate key fails inside its own savepoint only.
          if (v === 4) await sql`insert into t (v) values (${1})`.execute(trx);
          return v;
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason.message).toBe('boom');
    expect(dialect.isUniqueViolation((results[3] as PromiseRejectedResult).reason)).toBe(true);
    const rows = raw.prepare('select v from t order by v').all() as { v: number }[];
    expect(rows.map((r) => r.v)).toEqual([1, 2, 5]);
    // Later writes see earlier ones of the same batch, in arrival order.
    const seen = await Promise.all([
      dialect.writeTransaction(db, (trx) => sql`insert into t (v) values (${10})`.execute(trx)),
      dialect.writeTransaction(db, async (trx) =>
        Number((await sql<{ n: number }>`select count(*) as n from t where v = 10`.execute(trx)).rows[0]?.n),
      ),
    ]);
    expect(seen[1]).toBe(1);
  });

  it('a lone write that throws rolls back and nothing stays open', async () => {
    await expect(
      dialect.writeTransaction(db, async (trx) => {
        await sql`insert into t (v) values (${20})`.execute(trx);
        throw new Error('nope');
      }),
    ).rejects.toThrow('nope');
    expect(raw.inTransaction).toBe(false);
    expect(raw.prepare('select count(*) as n from t where v = 20').get()).toEqual({ n: 0 });
  });

  it('keeps savepoint and statement journals in memory (temp_store = MEMORY), durability as before', () => {
    // 2 = MEMORY: a batch's savepoints write no temporary files (docs/performance.md#sqlite-group-commit).
    expect(raw.prepare('pragma temp_store').pluck().get()).toBe(2);
    expect(raw.prepare('pragma synchronous').pluck().get()).toBe(2); // FULL
    expect(raw.prepare('pragma journal_mode').pluck().get()).toBe('wal');
  });
});
