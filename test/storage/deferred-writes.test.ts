import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/dialect.js';
import { later } from '../../src/db/dialect.js';
import { openTestStorage, testBackend } from '../helpers/storage.js';

// Backends: both — a deferred write must mean the same on both: sent later on PostgreSQL, at once on SQLite
// Tier: quick — one table, a few transactions
// docs/performance.md, "A write in one round trip on PostgreSQL": statements passed to `later` are held and sent
// just before the transaction's next statement or with its COMMIT. The transaction must behave as if each had run where it
// was written: later statements and reads see it, an error in it fails the whole transaction and commits
// nothing, a rolled-back transaction sends nothing, and the values arrive exactly as given (they travel as
// SQL literals on PostgreSQL).

let storage: Awaited<ReturnType<typeof openTestStorage>>;
beforeAll(async () => {
  storage = await openTestStorage();
  await storage.db.schema
    .createTable('deferred_probe')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('body', 'text')
    .addColumn('n', 'integer')
    .execute();
});
afterAll(async () => {
  await storage?.close();
});

const insert = (trx: Db, id: string, body: string | null = 'b', n: number | null = 1) =>
  later(trx, sql`insert into deferred_probe (id, body, n) values (${id}, ${body}, ${n})`.compile(trx));
const rows = async (ids: string[]) =>
  (
    await sql<{
      id: string;
      body: string | null;
      n: number | null;
    }>`select id, body, n from deferred_probe where id in (${sql.join(ids)}) order by id`.execute(storage.db)
  ).rows;
const write = <T>(fn: (trx: Db) => Promise<T>) => storage.dialect.writeTransaction(storage.db, fn);

describe(`deferred writes (${testBackend()})`, () => {
  it('are seen by the transaction’s later statements and committed with it', async () => {
    const seen = await write(async (trx) => {
      await insert(trx, 'seen-1');
      await insert(trx, 'seen-2');
      const { rows: inside } = await sql<{
        n: number | string;
      }>`select count(*) as n from deferred_probe where id like 'seen-%'`.execute(trx);
      await insert(trx, 'seen-3');
      return Number(inside[0]?.n);
    });
    expect(seen).toBe(2);
    expect((await rows(['seen-1', 'seen-2', 'seen-3'])).map((r) => r.id)).toEqual(['seen-1', 'seen-2', 'seen-3']);
  });

  it('commit in a transaction that runs nothing else', async () => {
    await write(async (trx) => {
      await insert(trx, 'only-1');
      await insert(trx, 'only-2');
    });
    expect((await rows(['only-1', 'only-2'])).length).toBe(2);
  });

  it('fail the whole transaction when one of them fails, commit nothing, and leave the connections usable', async () => {
    await write(async (trx) => insert(trx, 'taken'));
    for (let i = 0; i < 8; i++) {
      const failed = await write(async (trx) => {
        await insert(trx, `lost-${i}`);
        await insert(trx, 'taken'); // a primary-key violation, found when it is sent
      }).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(storage.dialect.isUniqueViolation(failed)).toBe(true);
    }
    expect(await rows(Array.from({ length: 8 }, (_, i) => `lost-${i}`))).toEqual([]);
    // Every pooled connection still works, in and out of transactions.
    await Promise.all(Array.from({ length: 8 }, (_, i) => write(async (trx) => insert(trx, `after-${i}`))));
    expect((await rows(Array.from({ length: 8 }, (_, i) => `after-${i}`))).length).toBe(8);
  });

  it('are not committed when the transaction throws', async () => {
    const err = await write(async (trx) => {
      await insert(trx, 'thrown');
      throw new Error('changed my mind');
    }).catch((e: Error) => e);
    expect((err as Error).message).toBe('changed my mind');
    expect(await rows(['thrown'])).toEqual([]);
  });

  it('arrive exactly as given: quotes, backslashes, newlines, non-ASCII, JSON text and nulls', async () => {
    const bodies = [
      "it's",
      'back\\slash \\x27 \\\\',
      "E'\\' ; drop table deferred_probe; --",
      'line\nbreak\ttab',
      'ünïcödé ✓ 😀',
      '{"a":"b\\"c","d":[1,null]}',
      '$1 $2 $$ $tag$',
      '',
    ];
    await write(async (trx) => {
      for (const [i, body] of bodies.entries()) await insert(trx, `v-${i}`, body, i);
      await insert(trx, 'v-null', null, null);
    });
    const back = await rows([...bodies.map((_, i) => `v-${i}`), 'v-null']);
    expect(back.filter((r) => r.id !== 'v-null').map((r) => [r.body, Number(r.n)])).toEqual(
      bodies.map((b, i) => [b, i]),
    );
    expect(back.find((r) => r.id === 'v-null')).toEqual({ id: 'v-null', body: null, n: null });
  });
});
