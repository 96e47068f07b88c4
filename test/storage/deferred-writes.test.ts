import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/dialect.js';
import { later } from '../../src/db/dialect.js';
import { type Param, prepared } from '../../src/db/prepared.js';
import { openTestStorage, testBackend } from '../helpers/storage.js';

// Backends: both — a deferred write must mean the same on both: sent later on PostgreSQL, at once on SQLite
// Tier: quick — one table, a few transactions
// docs/performance.md, "A write in one round trip on PostgreSQL": statements passed to `later` are held and sent
// just before the transaction's next statement or with its COMMIT. The transaction must behave as if each had run where it
// was written: later statements and reads see it, an error in it fails the whole transaction and commits
// nothing, a rolled-back transaction sends nothing, and the values arrive exactly as given (they travel as
// SQL literals on PostgreSQL). On PostgreSQL the next statement travels in the same string when it can be written
// with literals too: one round trip, and its result as if it had been sent alone.

// The pg query calls (each one round trip) of this file's connections: the driver (src/db/pg-driver.ts) calls pg's `query`.
let roundTrips = 0;
const pgQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  roundTrips += 1;
  return pgQuery.apply(this, args);
} as typeof pg.Client.prototype.query;
afterAll(() => {
  pg.Client.prototype.query = pgQuery as typeof pg.Client.prototype.query;
});

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

  it('keep text of their own that looks like a parameter ($1 in a quoted literal): such a statement is sent as it is', async () => {
    await write(async (trx) => {
      await insert(trx, 'quoted-0');
      await later(
        trx,
        sql`insert into deferred_probe (id, body, n) values (${'quoted-1'}, '$1 ;$2', ${5})`.compile(trx),
      );
      await insert(trx, 'quoted-2');
    });
    expect(await rows(['quoted-0', 'quoted-1', 'quoted-2'])).toEqual([
      { id: 'quoted-0', body: 'b', n: 1 },
      { id: 'quoted-1', body: '$1 ;$2', n: 5 },
      { id: 'quoted-2', body: 'b', n: 1 },
    ]);
  });
});

const byId = prepared((db, $: Param<{ id: string }>) =>
  db
    .selectFrom('deferred_probe' as never)
    .select(['id', 'body', 'n'] as never[])
    .where('id' as never, '=', $('id')),
);
/** Values of every kind the API's rows carry, read back: timestamps, JSON, big and small numbers, booleans, nulls, arrays. */
const typed = (trx: Db, prefix: string) =>
  testBackend() === 'sqlite'
    ? sql`select ${'2026-11-27T17:16:01.123Z'} as at, ${'{"a":[1]}'} as j, ${7} as small, ${1.25} as num, ${null} as absent,
      count(*) as c from deferred_probe where id like ${`${prefix}%`}`.execute(trx)
    : sql`select ${'2026-11-27T17:16:01.123Z'}::timestamptz as at, now() as now, ${'{"a":[1,"x\\"y"],"b":null}'}::jsonb as j,
    ${'9007199254740993'}::bigint as big, ${7}::int as small, ${1.25}::numeric as num, ${true}::boolean as yes,
    ${null}::text as absent, ${['a', 'b"c', null]}::text[] as arr, count(*) as c
    from deferred_probe where id like ${`${prefix}%`}`.execute(trx);

describe(`the transaction's next statement after deferred writes (${testBackend()})`, () => {
  const postgres = testBackend() === 'postgres';

  it('travels with them in one round trip on PostgreSQL, and its result is the one it gets alone', async () => {
    let trips = 0;
    const shapes = await write(async (trx) => {
      const t0 = roundTrips;
      await insert(trx, 'shape-0'); // held with BEGIN
      const held = await typed(trx, 'shape-'); // sent with them
      trips = roundTrips - t0;
      const alone = await typed(trx, 'shape-'); // nothing held: the extended protocol
      await insert(trx, 'shape-1');
      const heldReturning = await sql`insert into deferred_probe (id, body, n) values (${'shape-2'}, ${'x'}, ${2})
        returning id, body, n`.execute(trx);
      const aloneReturning = await sql`insert into deferred_probe (id, body, n) values (${'shape-3'}, ${'x'}, ${3})
        returning id, body, n`.execute(trx);
      await insert(trx, 'shape-4');
      const heldUpdate =
        await sql`update deferred_probe set n = n + ${1} where id in (${'shape-0'}, ${'shape-1'})`.execute(trx);
      const aloneUpdate =
        await sql`update deferred_probe set n = n + ${1} where id in (${'shape-0'}, ${'shape-4'})`.execute(trx);
      return { held, alone, heldReturning, aloneReturning, heldUpdate, aloneUpdate };
    });
    if (postgres) expect(trips).toBe(1);
    expect(shapes.held.rows).toEqual(shapes.alone.rows);
    const row = shapes.held.rows[0] as Record<string, unknown>;
    expect(row.at).toBe('2026-11-27T17:16:01.123Z');
    if (postgres) expect(row.j).toEqual({ a: [1, 'x"y'], b: null });
    expect(Number(row.c)).toBe(1);
    expect(shapes.heldReturning.rows).toEqual([{ id: 'shape-2', body: 'x', n: 2 }]);
    expect(shapes.aloneReturning.rows).toEqual([{ id: 'shape-3', body: 'x', n: 3 }]);
    expect(shapes.heldReturning.numAffectedRows).toEqual(shapes.aloneReturning.numAffectedRows);
    expect(shapes.heldUpdate.numAffectedRows).toBe(2n);
    expect(shapes.aloneUpdate.numAffectedRows).toBe(2n);
  });

  it('runs a prepared() query as its named statement with them, once it is prepared on the connection', async () => {
    let trips = 0;
    const found = await write(async (trx) => {
      await insert(trx, 'named-0', 'first', 0);
      const first = await byId.execute(trx, { id: 'named-0' }); // prepared here if the connection had not yet
      await insert(trx, 'named-1', "it's", 1);
      const t0 = roundTrips;
      const second = await byId.execute(trx, { id: 'named-1' });
      trips = roundTrips - t0;
      return [first.rows, second.rows];
    });
    if (postgres) expect(trips).toBe(1);
    expect(found).toEqual([[{ id: 'named-0', body: 'first', n: 0 }], [{ id: 'named-1', body: "it's", n: 1 }]]);
  });

  it('falls back to a round trip of their own when the statement has a value with no literal form', async () => {
    let trips = 0;
    const n = await write(async (trx) => {
      await insert(trx, 'binary-0');
      const t0 = roundTrips;
      const { rows: r } = await sql<{ n: number }>`select length(${Buffer.from('abc')}) as n`.execute(trx);
      trips = roundTrips - t0;
      return r[0]?.n;
    });
    if (postgres) expect(trips).toBe(2);
    expect(Number(n)).toBe(3);
    expect((await rows(['binary-0'])).length).toBe(1);
  });

  it('fail with it, whichever of them fails: nothing commits, the error is the same, and a retry works', async () => {
    await write(async (trx) => insert(trx, 'combined-taken'));
    // A deferred insert fails: the statement sent with it is not run.
    const heldFails = await write(async (trx) => {
      await insert(trx, 'combined-lost-1');
      await insert(trx, 'combined-taken');
      await typed(trx, 'combined-');
    }).catch((e: unknown) => e);
    expect(storage.dialect.isUniqueViolation(heldFails)).toBe(true);
    // The statement sent with them fails: they are rolled back with it.
    const nextFails = await write(async (trx) => {
      await insert(trx, 'combined-lost-2');
      await sql`insert into deferred_probe (id, body, n) values (${'combined-taken'}, ${'b'}, ${1})`.execute(trx);
    }).catch((e: unknown) => e);
    expect(storage.dialect.isUniqueViolation(nextFails)).toBe(true);
    expect(await rows(['combined-lost-1', 'combined-lost-2'])).toEqual([]);
    // Retried with other ids, on connections that sent ROLLBACK after the aborted strings.
    for (let i = 0; i < 6; i++) {
      const c = await write(async (trx) => {
        await insert(trx, `combined-retry-${i}`);
        return Number(((await typed(trx, `combined-retry-${i}`)).rows[0] as { c?: unknown } | undefined)?.c);
      });
      expect(c).toBe(1);
    }
    expect((await rows(Array.from({ length: 6 }, (_, i) => `combined-retry-${i}`))).length).toBe(6);
  });
});
