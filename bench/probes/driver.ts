// Probe `driver` (docs/performance.md#probes): the PostgreSQL client alone, `pg` (what the service uses, with named
// prepared statements as `namedReader` runs them) against porsager's `postgres` (postgres.js, prepared statements too),
// on the SQL of the hot reads: a resource by id and a list page of 21 rows. Same table, same concurrency (32 queries in
// flight over a pool of 10), interleaved rounds (pg, postgres, pg, …). Per round: queries/s, CPU µs per query of this
// process (process.cpuUsage) and of the PostgreSQL and Redis server processes on this machine (/proc, as the bench's
// `+ db`).
//
// `postgres` is not a dependency of the service: install it for the measurement only
// (`npm install --no-save postgres`); without it this probe says so and returns.
// Run: TEST_DATABASE_URL=postgres://… npm run bench -- --probe driver [--duration 3] [--rounds 5] [--in-flight 32] [--pool 10]
import { loadavg } from 'node:os';
import { Command } from 'commander';
import pg from 'pg';
import { databaseCpuMs } from '../harness.js';

/** Runs the probe with its command-line options (`args`, after the probe's name). */
export async function run(args: string[]): Promise<void> {
  const url = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!url) {
    process.stdout.write('--probe driver: set TEST_DATABASE_URL (postgres://…) to measure the drivers; skipped.\n');
    return;
  }
  type Sql = {
    unsafe(text: string, values: unknown[], opts: { prepare: boolean }): Promise<unknown[]>;
    end(opts?: { timeout: number }): Promise<void>;
  };
  type PostgresJs = (url: string, opts: Record<string, unknown>) => Sql;
  let postgresJs: PostgresJs;
  try {
    // A name in a variable: the typecheck and the build must not need the package.
    const name = 'postgres';
    postgresJs = ((await import(name)) as { default: PostgresJs }).default;
  } catch {
    process.stdout.write(
      '--probe driver: the `postgres` package (postgres.js) is not installed; skipped. ' +
        'Install it for this measurement only: npm install --no-save postgres\n',
    );
    return;
  }

  const opts = new Command('driver')
    .option('--duration <s>', 'seconds per driver and round', Number, 3)
    .option('--rounds <n>', 'interleaved rounds', Number, 5)
    .option('--in-flight <n>', 'queries in flight', Number, 32)
    .option('--pool <n>', 'connections per driver', Number, 10)
    .parse(args, { from: 'user' })
    .opts<{ duration: number; rounds: number; inFlight: number; pool: number }>();
  const DURATION_MS = opts.duration * 1000;
  const ROUNDS = opts.rounds;
  const IN_FLIGHT = opts.inFlight;
  const POOL = opts.pool;
  const TIMESTAMPTZ_OID = 1184;
  const schema = `bench_driver_${process.pid}`;

  // The service's SQL, as Kysely compiles it (src/modules/resources/resources.repository.ts).
  const BY_ID = 'select * from "resources" where "id" = $1 and "workspace_id" = $2 and "env" = $3';
  const LIST = 'select * from "resources" where "workspace_id" = $1 and "env" = $2 order by "id" limit $3';
  const ROWS = 1000;
  const ws = 'ws_bench';
  const ids = Array.from({ length: ROWS }, (_, i) => `res_${String(i + 1).padStart(26, '0')}`);

  // Timestamps come back as ISO strings in both, as in the service (src/db/postgres.ts).
  const pool = new pg.Pool({
    connectionString: url,
    max: POOL,
    options: `-c search_path=${schema}`,
    types: {
      getTypeParser(oid: number, format?: 'text' | 'binary') {
        if (oid === TIMESTAMPTZ_OID) return (v: string) => new Date(v).toISOString();
        return pg.types.getTypeParser(oid, format as 'text');
      },
    } as pg.CustomTypesConfig,
  });
  const sqlJs = postgresJs(url, {
    max: POOL,
    prepare: true,
    connection: { search_path: schema },
    onnotice: () => {},
    types: {
      tstz: {
        to: TIMESTAMPTZ_OID,
        from: [TIMESTAMPTZ_OID],
        serialize: (v: string) => v,
        parse: (v: string) => new Date(v).toISOString(),
      },
    },
  });

  await pool.query(`create schema ${schema}`);
  await pool.query(`create table ${schema}.resources (
    id text primary key, workspace_id text not null, env text not null, name text not null, type text not null,
    status text not null, metadata jsonb not null, created_at timestamptz not null, updated_at timestamptz not null)`);
  await pool.query(`create index on ${schema}.resources (workspace_id, env, id)`);
  await pool.query(
    `insert into ${schema}.resources select 'res_' || lpad(g::text, 26, '0'), $1, 'live', 'resource ' || g, 'standard',
     'active', '{"team":"core","tier":"gold"}', now(), now() from generate_series(1, ${ROWS}) g`,
    [ws],
  );
  await pool.query(`analyze ${schema}.resources`);

  type Query = 'GET by id' | 'list of 20';
  type Driver = 'pg' | 'postgres';
  let n = 0;
  const run: Record<Driver, Record<Query, () => Promise<unknown>>> = {
    pg: {
      'GET by id': () =>
        pool.query({ name: 'by_id', text: BY_ID, values: [ids[n++ % ROWS], ws, 'live'] }).then((r) => r.rows),
      'list of 20': () => pool.query({ name: 'list', text: LIST, values: [ws, 'live', 21] }).then((r) => r.rows),
    },
    postgres: {
      'GET by id': () => sqlJs.unsafe(BY_ID, [ids[n++ % ROWS], ws, 'live'], { prepare: true }),
      'list of 20': () => sqlJs.unsafe(LIST, [ws, 'live', 21], { prepare: true }),
    },
  };

  /** `IN_FLIGHT` loops, each one query after another, for `ms`: queries/s and CPU µs per query. */
  async function measure(fn: () => Promise<unknown>, ms: number) {
    const until = performance.now() + ms;
    let done = 0;
    const cpu0 = process.cpuUsage();
    const db0 = databaseCpuMs();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (performance.now() < until) {
          const rows = (await fn()) as unknown[];
          if (rows.length === 0) throw new Error('no rows');
          done++;
        }
      }),
    );
    const secs = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    return {
      qps: done / secs,
      cpuUs: (cpu.user + cpu.system) / done,
      dbUs: ((databaseCpuMs() - db0) * 1000) / done,
    };
  }

  const fmt = (x: number) => x.toFixed(1);
  try {
    // Same rows from both (a check that the comparison compares the same thing).
    const a = JSON.stringify(await run.pg['list of 20']());
    const b = JSON.stringify(await run.postgres['list of 20']());
    if (a !== b) throw new Error(`the drivers returned different rows:\n${a.slice(0, 300)}\n${b.slice(0, 300)}`);
    process.stdout.write(
      `load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}; ${IN_FLIGHT} in flight, pool ${POOL}, ${ROUNDS} rounds of ${DURATION_MS / 1000} s per driver\n`,
    );
    for (const q of ['GET by id', 'list of 20'] as const) {
      for (const d of ['pg', 'postgres'] as const) await measure(run[d][q], 1000); // warm-up
      process.stdout.write(
        `\n${q}\n| round | pg q/s | pg client µs/q | pg db µs/q | postgres q/s | postgres client µs/q | postgres db µs/q | client CPU postgres ÷ pg |\n|---|---:|---:|---:|---:|---:|---:|---:|\n`,
      );
      for (let r = 1; r <= ROUNDS; r++) {
        const p = await measure(run.pg[q], DURATION_MS);
        const j = await measure(run.postgres[q], DURATION_MS);
        process.stdout.write(
          `| ${r} | ${fmt(p.qps)} | ${fmt(p.cpuUs)} | ${fmt(p.dbUs)} | ${fmt(j.qps)} | ${fmt(j.cpuUs)} | ${fmt(j.dbUs)} | ${(j.cpuUs / p.cpuUs).toFixed(2)} |\n`,
        );
      }
    }
    process.stdout.write(
      `\nload average after ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
    );
  } finally {
    await pool.query(`drop schema ${schema} cascade`);
    await pool.end();
    await sqlJs.end({ timeout: 1 });
  }
}
