// Benchmark (docs/performance.md, "pg's row parsing"): what `pg` costs to turn the service's hot reads' results into
// row objects, against the alternatives: object rows with pg-types' text parsers and the service's timestamp parser
// (what src/db/postgres.ts ran before), identity parsers for the text columns, `rowMode: 'array'` with one generated
// object literal per statement (as src/db/sqlite.ts rowReader does for SQLite), timestamps turned into ISO strings
// by rearranging PostgreSQL's text (src/db/postgres.ts isoTimestamp), and binary results.
// Two measures, CPU µs per query, median of interleaved rounds (variant A, B, …, A, B, …):
// - parse: the rows of one query turned into objects (pg's Result.addFields and parseRow, or the row reader) from
//   the field strings pg-protocol hands over, in a tight loop: the part a variant changes, without the noise of I/O;
// - query: whole queries through a pool (32 in flight over 10 connections, named prepared statements as the
//   service runs them), this process's CPU (process.cpuUsage), which includes the sockets.
// Every variant's rows are checked equal to the first's before anything is measured.
// Run: TEST_DATABASE_URL=postgres://… npx tsx bench/pg-rows.ts [--duration 2] [--rounds 5] [--loops 20000]
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import pg from 'pg';
import { isoTimestamp } from '../src/db/postgres.js';

const url = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
if (!url) {
  process.stdout.write('bench/pg-rows.ts: set TEST_DATABASE_URL (postgres://…) to measure; skipped.\n');
  process.exit(0);
}
const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const DURATION_MS = arg('duration', 2) * 1000;
const ROUNDS = arg('rounds', 5);
const LOOPS = arg('loops', 20000);
const IN_FLIGHT = 32;
const POOL = 10;
const TIMESTAMPTZ = 1184;
const schema = `bench_pg_rows_${process.pid}`;

// The service's SQL, as Kysely compiles it (src/modules/resources/resources.repository.ts).
const BY_ID = 'select * from "resources" where "id" = $1 and "workspace_id" = $2 and "env" = $3';
const LIST = 'select * from "resources" where "workspace_id" = $1 and "env" = $2 order by "id" limit $3';
const ROWS = 1000;
const ws = 'ws_bench';
const ids = Array.from({ length: ROWS }, (_, i) => `res_${String(i + 1).padStart(26, '0')}`);

type Parser = (v: string) => unknown;
const slowTimestamp: Parser = (v) => new Date(v).toISOString();
const identity: Parser = (v) => v;
/** Type parsers: pg-types' for everything but timestamptz; `text` identity for the text columns (25). */
function typesOf(timestamp: Parser, textIdentity = false) {
  return {
    getTypeParser(oid: number, format?: 'text' | 'binary') {
      if (oid === TIMESTAMPTZ) return timestamp;
      if (textIdentity && oid === 25) return identity;
      return pg.types.getTypeParser(oid, format as 'text');
    },
  } as pg.CustomTypesConfig;
}

type RowBuilder = (rows: unknown[][]) => unknown[];
const builders = new Map<string, { names: string[]; build: RowBuilder }>();

/**
 * Variants C and E: a named statement's array rows turned into objects with one literal generated per statement
 * from its column names (as src/db/sqlite.ts rowReader does for SQLite), regenerated if its columns change.
 */
function rowBuilder(name: string, fields: readonly { name: string }[]): RowBuilder {
  const known = builders.get(name);
  if (known && known.names.length === fields.length && known.names.every((n, i) => n === fields[i]?.name)) {
    return known.build;
  }
  const names = fields.map((f) => f.name);
  const literal = names.map((n, i) => `${JSON.stringify(n)}: a[${i}]`).join(', ');
  const toRow = new Function('a', `return { ${literal} };`) as (a: unknown[]) => unknown;
  const build: RowBuilder = (rows) => {
    const out = new Array<unknown>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = toRow(rows[i] as unknown[]);
    return out;
  };
  builders.set(name, { names, build });
  return build;
}

/**
 * Variant F (parse only): no pg Result at all, as a custom pg Query (a Submittable) could do: one function per
 * statement, generated from its RowDescription, that builds the object straight from the DataRow's field strings,
 * calling a parser only for the columns that have one (timestamps, JSON; text columns are taken as they come).
 */
const direct = new Map<string, { names: string[]; build: (a: (string | null)[]) => unknown }>();
function directBuilder(name: string, fields: readonly pg.FieldDef[], types: pg.CustomTypesConfig) {
  const known = direct.get(name);
  if (known && known.names.length === fields.length && known.names.every((n, i) => n === fields[i]?.name)) {
    return known.build;
  }
  const names = fields.map((f) => f.name);
  const parsers = fields.map((f) => (f.dataTypeID === 25 ? null : types.getTypeParser(f.dataTypeID, 'text')));
  const literal = names
    .map((n, i) => `${JSON.stringify(n)}: ${parsers[i] ? `a[${i}] === null ? null : p[${i}](a[${i}])` : `a[${i}]`}`)
    .join(', ');
  const build = new Function('p', `return (a) => ({ ${literal} });`)(parsers) as (a: (string | null)[]) => unknown;
  direct.set(name, { names, build });
  return build;
}

interface Variant {
  name: string;
  types: pg.CustomTypesConfig;
  array: boolean;
  /** Measured in the parse loop only (variant F). */
  parseOnly?: boolean;
}
const VARIANTS: Variant[] = [
  { name: 'A: object rows, pg-types + Date timestamps (before)', types: typesOf(slowTimestamp), array: false },
  { name: 'B: A + identity parser for text columns', types: typesOf(slowTimestamp, true), array: false },
  { name: "C: rowMode 'array' + one literal per statement", types: typesOf(slowTimestamp), array: true },
  { name: 'D: A + timestamps rearranged (isoTimestamp)', types: typesOf(isoTimestamp), array: false },
  { name: 'E: C + D', types: typesOf(isoTimestamp), array: true },
  {
    name: 'F: no pg Result, one generated function per statement + D',
    types: typesOf(isoTimestamp),
    array: true,
    parseOnly: true,
  },
];

const admin = new pg.Pool({ connectionString: url, max: 1 });
const pools = VARIANTS.map(
  (v) => new pg.Pool({ connectionString: url, max: POOL, options: `-c search_path=${schema}`, types: v.types }),
);

await admin.query(`create schema ${schema}`);
await admin.query(`create table ${schema}.resources (
  id text primary key, workspace_id text not null, env text not null, name text not null, type text not null,
  status text not null, metadata jsonb not null, created_at timestamptz not null, updated_at timestamptz not null)`);
await admin.query(`create index on ${schema}.resources (workspace_id, env, id)`);
// Timestamps to the millisecond, as the service writes them.
await admin.query(
  `insert into ${schema}.resources select 'res_' || lpad(g::text, 26, '0'), $1, 'live', 'resource ' || g, 'standard',
   'active', jsonb_build_object('team', 'core', 'i', g::text),
   date_trunc('milliseconds', now()) - g * interval '1.237 second', date_trunc('milliseconds', now()) - g * interval '1 ms'
   from generate_series(1, ${ROWS}) g`,
  [ws],
);
await admin.query(`analyze ${schema}.resources`);

type Query = 'GET by id' | 'list of 20';
let n = 0;
const QUERIES: Record<Query, { name: string; text: string; values: () => unknown[] }> = {
  'GET by id': { name: 'by_id', text: BY_ID, values: () => [ids[n++ % ROWS], ws, 'live'] },
  'list of 20': { name: 'list', text: LIST, values: () => [ws, 'live', 21] },
};

/** Runs `q` through variant `i`'s pool the way the service would with that variant. */
async function query(i: number, q: Query): Promise<unknown[]> {
  const v = VARIANTS[i] as Variant;
  const { name, text, values } = QUERIES[q];
  if (!v.array) return (await (pools[i] as pg.Pool).query({ name, text, values: values() })).rows;
  const r = await (pools[i] as pg.Pool).query({ name, text, values: values(), rowMode: 'array' });
  return rowBuilder(name, r.fields)(r.rows as unknown[][]);
}

// pg's own Result: what pool.query runs on every RowDescription and DataRow (pg/lib/result.js).
const require = createRequire(import.meta.url);
const Result = require('pg/lib/result.js') as new (
  rowMode: string | undefined,
  types: pg.CustomTypesConfig,
) => { addFields(f: unknown[]): void; parseRow(r: unknown[]): unknown; rows: unknown[]; fields: pg.FieldDef[] };

/** The field descriptions and raw field strings of one query's result, as pg-protocol hands them to pg. */
async function rawOf(q: Query): Promise<{ fields: pg.FieldDef[]; rows: (string | null)[][] }> {
  const raw = new pg.Pool({
    connectionString: url,
    max: 1,
    options: `-c search_path=${schema}`,
    types: { getTypeParser: () => identity } as pg.CustomTypesConfig,
  });
  const { name, text } = QUERIES[q];
  n = 0;
  const r = await raw.query({ name, text, values: QUERIES[q].values(), rowMode: 'array' });
  await raw.end();
  return { fields: r.fields, rows: r.rows as (string | null)[][] };
}

/** CPU µs to turn one query's raw rows into objects with variant `i`, over `LOOPS` queries. */
function parseOnce(i: number, raw: { fields: pg.FieldDef[]; rows: (string | null)[][] }, name: string): number {
  const v = VARIANTS[i] as Variant;
  let sink = 0;
  const cpu0 = process.cpuUsage();
  for (let k = 0; k < LOOPS && v.parseOnly; k++) {
    const build = directBuilder(name, raw.fields, v.types);
    const out = new Array<unknown>(raw.rows.length);
    for (let j = 0; j < raw.rows.length; j++) out[j] = build(raw.rows[j] as (string | null)[]);
    sink += out.length;
  }
  for (let k = 0; k < LOOPS && !v.parseOnly; k++) {
    const r = new Result(v.array ? 'array' : undefined, v.types);
    r.addFields(raw.fields);
    for (const row of raw.rows) r.rows.push(r.parseRow(row));
    const rows = v.array ? rowBuilder(name, r.fields)(r.rows as unknown[][]) : r.rows;
    sink += rows.length;
  }
  const cpu = process.cpuUsage(cpu0);
  if (sink !== LOOPS * raw.rows.length) throw new Error('lost rows');
  return (cpu.user + cpu.system) / LOOPS;
}

/** `IN_FLIGHT` loops, each one query after another, for `ms`: CPU µs per query of this process. */
async function measure(i: number, q: Query, ms: number): Promise<number> {
  const until = performance.now() + ms;
  let done = 0;
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < until) {
        if ((await query(i, q)).length === 0) throw new Error('no rows');
        done++;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / done;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/**
 * Binary results (`binary: true` on the client: every column of every result in binary): pg 8's protocol parser
 * decodes every field as UTF-8 text (pg-protocol's DataRow), so any byte above 0x7f of a binary value is lost.
 * Counts the timestamps of the whole table that come back other than in text.
 */
async function binaryCheck(): Promise<string> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  Object.assign(client, { binary: true });
  await client.connect();
  try {
    const text = await admin.query(`select id, created_at from ${schema}.resources order by id`);
    // With a parameter: binary results need the extended protocol (a query without values runs as simple text).
    const bin = await client.query({
      text: 'select id, created_at from resources where id > $1 order by id',
      values: [''],
    });
    let wrong = 0;
    for (const [i, row] of text.rows.entries()) {
      const got = (bin.rows[i] as { created_at: unknown }).created_at;
      const ok = got instanceof Date && got.getTime() === (row as { created_at: Date }).created_at.getTime();
      if (!ok) wrong++;
    }
    return `binary results: ${wrong} of ${text.rows.length} timestamps differ from the text results`;
  } catch (err) {
    return `binary results: ${(err as Error).message}`;
  } finally {
    await client.end();
  }
}

try {
  for (const q of ['GET by id', 'list of 20'] as const) {
    n = 0;
    const expect = JSON.stringify(await query(0, q));
    for (let i = 1; i < VARIANTS.length; i++) {
      if (VARIANTS[i]?.parseOnly) continue;
      n = 0;
      const got = JSON.stringify(await query(i, q));
      if (got !== expect) throw new Error(`${VARIANTS[i]?.name} returned other rows:\n${got}\n${expect}`);
    }
  }
  for (const q of ['GET by id', 'list of 20'] as const) {
    // Variant F, from the raw field strings, against what pool.query gives with variant A.
    const raw = await rawOf(q);
    n = 0;
    const expect = JSON.stringify(await query(0, q));
    const f = VARIANTS.findIndex((v) => v.parseOnly);
    const build = directBuilder(QUERIES[q].name, raw.fields, (VARIANTS[f] as Variant).types);
    const got = JSON.stringify(raw.rows.map((r) => build(r)));
    if (got !== expect) throw new Error(`${VARIANTS[f]?.name} returned other rows:\n${got}\n${expect}`);
  }
  process.stdout.write(`${await binaryCheck()}\n`);
  process.stdout.write(
    `load average ${load()}; ${ROUNDS} interleaved rounds; parse: ${LOOPS} queries per round; query: ${DURATION_MS / 1000} s per round, ${IN_FLIGHT} in flight, pool ${POOL}\n`,
  );
  for (const q of ['GET by id', 'list of 20'] as const) {
    const raw = await rawOf(q);
    const parse = VARIANTS.map(() => [] as number[]);
    const whole = VARIANTS.map(() => [] as number[]);
    for (let i = 0; i < VARIANTS.length; i++) {
      parseOnce(i, raw, QUERIES[q].name); // warm-up
      if (!VARIANTS[i]?.parseOnly) await measure(i, q, 500);
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (let i = 0; i < VARIANTS.length; i++) parse[i]?.push(parseOnce(i, raw, QUERIES[q].name));
      for (let i = 0; i < VARIANTS.length; i++) {
        if (!VARIANTS[i]?.parseOnly) whole[i]?.push(await measure(i, q, DURATION_MS));
      }
    }
    process.stdout.write(
      `\n${q} (${raw.rows.length} rows)\n| variant | parse µs/query, median (min–max) | query µs/query, median (min–max) |\n|---|---:|---:|\n`,
    );
    const f = (xs: number[]) =>
      xs.length === 0 ? '–' : `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
    for (let i = 0; i < VARIANTS.length; i++) {
      process.stdout.write(`| ${VARIANTS[i]?.name} | ${f(parse[i] ?? [])} | ${f(whole[i] ?? [])} |\n`);
    }
  }
  process.stdout.write(`\nload average after ${load()}\n`);
} finally {
  await admin.query(`drop schema ${schema} cascade`);
  await admin.end();
  await Promise.all(pools.map((p) => p.end()));
}
