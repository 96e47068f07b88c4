// Benchmark (docs/performance.md#method): scenarios. Each runs against its own fresh database (seeded here) and its own server process.
// To add one, append to SCENARIOS: `seed` runs before the server starts, `run` measures through
// `ctx.measure`; a `standalone` scenario starts what it needs itself and returns its rows' numbers.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { runFanout } from './fanout.js';
import { type BenchDb, type BulkRange, collectCursors, createViaApi, type Measured } from './harness.js';

export interface ScenarioContext {
  db: BenchDb;
  port: number;
  duration: number;
  quick: boolean;
  /** What `seed` returned. */
  seeded: BulkRange | null;
  /** Runs autocannon against the server and records one row named `name`. */
  measure(name: string, requests: autocannon.Request[], opts?: { connections?: number }): Promise<Measured>;
  /**
   * Measures this server against a second one on the same database started with `otherEnv`, in
   * interleaved rounds; records the other as a reference row and this one with its ratio to it.
   */
  compare(name: string, requests: autocannon.Request[], otherEnv: NodeJS.ProcessEnv): Promise<void>;
  /** Records a row measured some other way (e.g. a direct SQL timing). */
  record(name: string, m: Measured & { note?: string }): void;
}

export interface Scenario {
  name: string;
  /** Part of `--quick` (the CI smoke run). */
  quick: boolean;
  /** Settings of the scenario's server (the bench's own come first; PLAN_LIMITS is off unless set here). */
  serverEnv?(): NodeJS.ProcessEnv;
  /** Bulk data to insert before the server starts. */
  seed?(db: BenchDb, quick: boolean, large: number): Promise<BulkRange>;
  run?(ctx: ScenarioContext): Promise<void>;
  /** Instead of `run`: measures on its own server against `db` and returns named rows. */
  standalone?(db: BenchDb, quick: boolean): Promise<(Measured & { scenario: string; rssMb: number })[]>;
}

const newBody = JSON.stringify({ name: 'bench', type: 'standard', metadata: { a: 'b' } });
const post = { method: 'POST' as const, path: '/v1/resources', body: newBody };
const page = (q: string) => ({ method: 'GET' as const, path: `/v1/resources?${q}` });

/** Cursor pages spread over the list: a walk from the start and walks from deep positions. */
async function cursorRequests(ctx: ScenarioContext, total: number): Promise<autocannon.Request[]> {
  const cursors: string[] = [];
  const starts = [0, Math.floor(total / 4), Math.floor(total / 2), total - 400];
  for (const offset of starts) {
    cursors.push(...(await collectCursors(ctx.port, ctx.db.headers, 20, 16, Math.max(0, offset))));
  }
  return cursors.map((c) => page(`limit=20&cursor=${encodeURIComponent(c)}`));
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'GET /v1/resources/{id}',
    quick: true,
    async run(ctx) {
      const [id] = await createViaApi(ctx.port, ctx.db.headers, 1);
      await ctx.measure('GET /v1/resources/{id}', [{ method: 'GET', path: `/v1/resources/${id}` }]);
    },
  },
  {
    // docs/usage.md: metering and the request log cost at most 5 % of GET-by-id throughput.
    name: 'metering on vs off',
    quick: false,
    async run(ctx) {
      const [id] = await createViaApi(ctx.port, ctx.db.headers, 1);
      await ctx.compare(
        'GET /v1/resources/{id}, metering on vs off',
        [{ method: 'GET', path: `/v1/resources/${id}` }],
        {
          USAGE_METERING: 'off',
        },
      );
    },
  },
  {
    // docs/billing.md#cost: the free cap's count (shared in Redis on PostgreSQL + Redis) costs at most
    // 5 % of GET-by-id throughput. The workspace is on `free` with a cap it never reaches.
    name: 'billing on vs off',
    quick: false,
    serverEnv: () => ({ PLAN_LIMITS: 'on', PLANS_FILE: benchPlansFile() }),
    async run(ctx) {
      const [id] = await createViaApi(ctx.port, ctx.db.headers, 1);
      await ctx.compare(
        'GET /v1/resources/{id}, billing on vs off (capped plan)',
        [{ method: 'GET', path: `/v1/resources/${id}` }],
        { PLAN_LIMITS: 'off' },
      );
    },
  },
  {
    // docs/billing.md#cost: payments with Stripe add no call to Stripe on the request path, only the plan cap's
    // cached read of the subscription's payment state (402 payment_required). Plan limits off on both sides, as by
    // default; the Stripe API base is a closed loopback port, so nothing leaves the machine.
    name: 'payments on vs off',
    quick: false,
    serverEnv: () => ({
      STRIPE_SECRET_KEY: 'sk_test_bench',
      STRIPE_WEBHOOK_SECRET: 'whsec_bench',
      STRIPE_API_BASE: 'http://127.0.0.1:9',
    }),
    async run(ctx) {
      const [id] = await createViaApi(ctx.port, ctx.db.headers, 1);
      await ctx.compare(
        'GET /v1/resources/{id}, payments with Stripe on vs off',
        [{ method: 'GET', path: `/v1/resources/${id}` }],
        {},
      );
    },
  },
  {
    name: 'GET /v1/resources?limit=20',
    quick: true,
    seed: (db, quick) => db.bulkInsert(quick ? 100 : 10_000),
    async run(ctx) {
      await ctx.measure('GET /v1/resources?limit=20', [page('limit=20')]);
      if (ctx.quick) return;
      const n = ctx.seeded?.count ?? 0;
      await ctx.measure(`GET /v1/resources?limit=20&offset=${n - 20} (deep offset, ${n})`, [
        page(`limit=20&offset=${n - 20}`),
      ]);
      await ctx.measure(`GET /v1/resources?limit=20&cursor=… (cursor pages, ${n})`, await cursorRequests(ctx, n));
    },
  },
  {
    name: 'POST /v1/resources',
    quick: true,
    async run(ctx) {
      await ctx.measure('POST /v1/resources', [post]);
    },
  },
  {
    name: 'PUT /v1/resources/{id}',
    quick: false,
    async run(ctx) {
      const [id] = await createViaApi(ctx.port, ctx.db.headers, 1);
      await ctx.measure('PUT /v1/resources/{id}', [
        { method: 'PUT', path: `/v1/resources/${id}`, body: JSON.stringify({ name: 'renamed' }) },
      ]);
    },
  },
  {
    name: 'mix 80% GET / 20% POST',
    quick: false,
    async run(ctx) {
      const [id] = await createViaApi(ctx.port, ctx.db.headers, 1);
      const get = { method: 'GET' as const, path: `/v1/resources/${id}` };
      await ctx.measure('mix 80% GET / 20% POST', [get, get, get, get, post]);
    },
  },
  {
    name: 'large workspace',
    quick: false,
    seed: (db, _quick, large) => db.bulkInsert(large),
    async run(ctx) {
      const n = ctx.seeded?.count ?? 0;
      const label = n.toLocaleString('en-US');
      await ctx.measure(`${label}: GET ?limit=20 (first page)`, [page('limit=20')]);
      await ctx.measure(`${label}: GET ?limit=20&cursor=… (cursor pages)`, await cursorRequests(ctx, n));
      // An offset this deep walks the index up to it on every request; 4 connections keep it from timing out.
      await ctx.measure(
        `${label}: GET ?limit=20&offset=${n - 20} (deep offset, 4 conns)`,
        [page(`limit=20&offset=${n - 20}`)],
        {
          connections: 4,
        },
      );
      // The cost meta.total would have as a COUNT(*) per request: timed directly on the database.
      const ws = ctx.db.workspaceId;
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        times.push(
          await ctx.db.timeQuery(`select count(*) from resources where workspace_id = '${ws}' and env = 'live'`),
        );
      }
      times.sort((a, b) => a - b);
      const mean = times.reduce((a, b) => a + b, 0) / times.length;
      ctx.record(`${label}: COUNT(*) of the workspace (direct SQL, 1 conn)`, {
        rps: Math.round(1000 / mean),
        p50: Math.round(times[2] as number),
        p99: Math.round(times[4] as number),
        non2xx: 0,
      });
    },
  },
  {
    // N events × M endpoints on a loopback receiver (bench/fanout.ts): req/s is deliveries/s from a
    // committed backlog; p50/p99 are event commit → first attempt, events created one at a time.
    name: 'webhook fan-out',
    quick: true,
    async standalone(db, quick) {
      const events = quick ? 100 : 2000;
      const endpoints = quick ? 2 : 5;
      const r = await runFanout({
        databaseUrl: db.url,
        endpoints,
        burstEvents: events,
        latencyEvents: quick ? 20 : 200,
      });
      return [
        {
          scenario: `webhook fan-out: ${events} events × ${endpoints} endpoints (deliveries/s; p50/p99 = commit → first attempt)`,
          rps: r.deliveriesPerSec,
          p50: r.firstAttemptP50,
          p99: r.firstAttemptP99,
          non2xx: r.non2xx + r.duplicates,
          rssMb: r.rssMb,
        },
      ];
    },
  },
];

/** Plans where `free` keeps its hard cap but at a billion requests, so the bench never reaches it. */
export function benchPlansFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'wsvc-bench-plans-')), 'plans.json');
  const plan = (id: string, name: string, cents: number, hardCap: boolean) => ({
    id,
    name,
    base_price_cents: cents,
    included_requests: 1_000_000_000,
    hard_cap: hardCap,
    overage_unit_requests: hardCap ? null : 10_000,
    overage_unit_price_cents: hardCap ? null : 50,
    max_resources: null,
    max_webhooks: 16,
  });
  writeFileSync(
    file,
    JSON.stringify({
      plans: [plan('free', 'Free', 0, true), plan('pro', 'Pro', 4_900, false), plan('scale', 'Scale', 49_900, false)],
    }),
  );
  return file;
}
