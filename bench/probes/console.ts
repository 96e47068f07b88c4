// Probe `console` (`npm run bench:console`, docs/console.md#performance): the console's page API calls behind 10,000
// resources and 100,000 deliveries (target: p99 ≤ 50 ms for every call). A real `wsvc serve --api-only` child process,
// a real session cookie, one request at a time per call (what one person's browser does), keep-alive.
// SQLite by default; `--pg postgres://…` for PostgreSQL (its own schema, dropped after).
// Run: `npm run bench -- --probe console [--pg <url>] [--n 300] [--resources 10000] [--deliveries 100000]`.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.js';
import { openStorage, type Storage } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import type { DeliveriesTable, EventsTable, ResourcesTable } from '../../src/db/types.js';
import { systemClock } from '../../src/kernel/clock.js';
import { systemActor } from '../../src/kernel/principal.js';
import { toResource } from '../../src/modules/resources/resources.repository.js';
import { createServices } from '../../src/services.js';

const PASSWORD = 'bench password 1234';

interface Options {
  /** PostgreSQL URL; SQLite when absent. */
  pg?: string;
  /** Requests per call, after 20 of warm-up. */
  n: number;
  resources: number;
  deliveries: number;
  /** The seed's first timestamp: resources, then deliveries, 1 ms apart. */
  seededFrom: number;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** Seeds directly in big transactions (the services would take minutes for 110,000 rows). */
async function seed(o: Options, storage: Storage, ws: string, webhookId: string): Promise<string> {
  const { resources: RESOURCES, deliveries: DELIVERIES, pg } = o;
  const db = storage.db;
  const base = o.seededFrom;
  const id = (prefix: string, i: number) => `${prefix}01BENCH${String(i).padStart(19, '0')}`;
  const at = (i: number) => new Date(base + i).toISOString();
  for (let i = 0; i < RESOURCES; i += 2000) {
    const rows: ResourcesTable[] = [];
    const events: EventsTable[] = [];
    for (let j = i; j < Math.min(RESOURCES, i + 2000); j++) {
      rows.push({
        id: id('res_', j),
        workspace_id: ws,
        env: 'live' as const,
        name: `resource ${j}`,
        type: (['standard', 'premium', 'custom'] as const)[j % 3] ?? 'standard',
        status: j % 10 === 0 ? ('archived' as const) : ('active' as const),
        metadata: JSON.stringify({ n: String(j) }),
        created_at: at(j),
        updated_at: at(j),
      });
      const row = rows[rows.length - 1] as ResourcesTable;
      const payload = {
        id: id('evt_', j),
        event: 'resource.created',
        created_at: at(j),
        data: { resource_id: row.id, resource: toResource(row) },
      };
      events.push({
        id: id('evt_', j),
        workspace_id: ws,
        env: 'live' as const,
        type: 'resource.created',
        resource_id: id('res_', j),
        payload: JSON.stringify(payload),
        created_at: at(j),
      });
    }
    await storage.dialect.writeTransaction(db, async (trx) => {
      await trx.insertInto('resources').values(rows).execute();
      await trx.insertInto('events').values(events).execute();
    });
  }
  await sql`delete from resource_counts where workspace_id = ${ws}`.execute(db);
  await sql`insert into resource_counts (workspace_id, env, status, type, slot, n)
    select workspace_id, env, status, type, 0, count(*) from resources where workspace_id = ${ws}
    group by workspace_id, env, status, type`.execute(db);
  for (let i = 0; i < DELIVERIES; i += 2000) {
    const rows: DeliveriesTable[] = [];
    for (let j = i; j < Math.min(DELIVERIES, i + 2000); j++) {
      const failed = j % 7 === 0;
      rows.push({
        id: id('dlv_', j),
        webhook_id: webhookId,
        event_id: id('evt_', j % RESOURCES),
        event_type: 'resource.created',
        workspace_id: ws,
        env: 'live' as const,
        status: failed ? ('failed' as const) : ('succeeded' as const),
        attempt_count: failed ? 6 : 1,
        next_attempt_at: null,
        lease_until: null,
        leased_by: null,
        last_response_status: failed ? 500 : 200,
        last_error: failed ? 'HTTP 500' : null,
        created_at: at(RESOURCES + j),
        updated_at: at(RESOURCES + j),
      });
    }
    await storage.dialect.writeTransaction(db, (trx) => trx.insertInto('deliveries').values(rows).execute());
  }
  // Steady state: autovacuum (PostgreSQL 13+ also vacuums insert-only tables) has set the visibility map, so
  // index-only scans and counts need not visit the table.
  if (pg) await sql`vacuum analyze`.execute(db);
  return id('res_', Math.floor(RESOURCES / 2));
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

/** Runs the probe with its command-line options (`args`, after the probe's name). */
export async function run(args: string[]): Promise<void> {
  const opts = new Command('console')
    .option('--pg <url>', 'PostgreSQL (a schema of its own, dropped after) instead of SQLite')
    .option('--n <n>', 'requests per call (after 20 of warm-up)', Number, 300)
    .option('--resources <n>', 'resources seeded (with their events)', Number, 10_000)
    .option('--deliveries <n>', 'deliveries seeded', Number, 100_000)
    .parse(args, { from: 'user' })
    .opts<Omit<Options, 'seededFrom'>>();
  const o: Options = { ...opts, seededFrom: Date.now() - opts.resources - opts.deliveries };
  const { pg, n: N, resources: RESOURCES, deliveries: DELIVERIES, seededFrom } = o;
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-bench-console-'));
  const schema = `bench_console_${randomBytes(4).toString('hex')}`;
  let url = `sqlite:${join(dir, 'bench.db')}`;
  if (pg) {
    const admin = openStorage({ url: pg, poolSize: 1 });
    await sql.raw(`create schema ${schema}`).execute(admin.db);
    await admin.close();
    url = pg;
  }
  const storage = openStorage({ url, poolSize: 4, schema: pg ? schema : undefined, statementTimeoutMs: 0 });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const config = loadConfig(
    {},
    {
      DATABASE_URL: url,
      SECRETS_KEY: process.env.SECRETS_KEY || undefined,
      PUBLIC_URL: base,
      WEBHOOK_ALLOW_INSECURE_URLS: true,
      PLAN_LIMITS: 'off',
    },
  );
  let child: ReturnType<typeof spawn> | undefined;
  try {
    await migrateToLatest(storage.db, storage.dialect);
    const services = createServices({ storage, clock: systemClock, config });
    const out = await services.workspaces.create(services.uow.as(systemActor('cli')), {
      name: 'Bench',
      adminEmail: 'bench@example.test',
    });
    const ws = out.workspace.id;
    // The admin's live key, as the HTTP layer would give it to the service.
    const admin = await services.keyRegistry.verify(`Bearer ${out.keys.live.key}`);
    if (!admin.ok) throw new Error(`the bench admin's key does not verify: ${admin.code}`);
    const hook = await services.webhooks.create(services.uow.as(admin.principal), {
      url: 'http://127.0.0.1:9/hook',
      events: ['*'],
    });
    const t0 = Date.now();
    const resourceId = await seed(o, storage, ws, hook.id);
    process.stderr.write(
      `[probe console] seeded ${RESOURCES} resources, ${DELIVERIES} deliveries in ${Date.now() - t0} ms\n`,
    );
    await services.consoleAuth.redeemLink(new URL(out.set_password_url).searchParams.get('token') ?? '', PASSWORD, {
      ip: '127.0.0.1',
    });

    const childUrl = pg ? `${pg}?options=${encodeURIComponent(`-c search_path=${schema}`)}` : url;
    child = spawn(process.execPath, ['bin/wsvc.js', 'serve', '--api-only'], {
      env: {
        ...process.env,
        DATABASE_URL: childUrl,
        PORT: String(port),
        PUBLIC_URL: base,
        LOG_LEVEL: 'warn',
        PLAN_LIMITS: 'off',
        // 24 calls × 320 requests pass the default 6,000 a minute on a quiet machine: 429s are not the page's cost.
        RATE_LIMIT_LIVE: '1000000',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    for (let i = 0; ; i++) {
      const ok = await fetch(`${base}/healthz`)
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) break;
      if (i > 200) throw new Error('server did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const signIn = await fetch(`${base}/console/api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: base },
      body: JSON.stringify({ email: 'bench@example.test', password: PASSWORD }),
    });
    if (signIn.status !== 201) throw new Error(`sign-in failed: ${signIn.status} ${await signIn.text()}`);
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const headers = { cookie, 'x-workspace-id': ws, 'x-env': 'live' };
    // The date filter keeps the newer half of the log (the console sends a day's start; the seed spans 100 s).
    const since = encodeURIComponent(new Date(seededFrom + RESOURCES + DELIVERIES / 2).toISOString());
    const hour = 3600_000;
    const hourEnd = encodeURIComponent(new Date(Math.ceil(Date.now() / hour) * hour).toISOString());
    const dayAgo = encodeURIComponent(new Date(Math.ceil(Date.now() / hour) * hour - 24 * hour).toISOString());
    const loadBefore = loadavg();
    const calls: [string, string][] = [
      ['session (every page)', '/console/api/session'],
      ['resources page', '/console/api/v1/resources?limit=50&order=desc'],
      ['resources search (name prefix)', '/console/api/v1/resources?limit=50&order=desc&name_prefix=resource%201'],
      ['resources page, filtered', '/console/api/v1/resources?limit=50&order=desc&status=archived&type=premium'],
      ['resource detail', `/console/api/v1/resources/${resourceId}`],
      ['resource event history', `/console/api/v1/events?resource_id=${resourceId}&limit=50&order=desc`],
      ['events page', '/console/api/v1/events?limit=50&order=desc'],
      ['delivery log', `/console/api/v1/webhooks/${hook.id}/deliveries?limit=50&order=desc`],
      ['delivery log, failed', `/console/api/v1/webhooks/${hook.id}/deliveries?status=failed&limit=50&order=desc`],
      [
        'delivery log, event filter (GET /deliveries)',
        `/console/api/v1/deliveries?webhook_id=${hook.id}&event=resource.created&limit=50&order=desc`,
      ],
      [
        'delivery log, date filter (GET /deliveries)',
        `/console/api/v1/deliveries?webhook_id=${hook.id}&created_after=${since}&limit=50&order=desc`,
      ],
      [
        'delivery log, event + status + date',
        `/console/api/v1/deliveries?webhook_id=${hook.id}&event=resource.created&status=failed&created_after=${since}&limit=50&order=desc`,
      ],
      ['overview: 10 newest events', '/console/api/v1/events?limit=10&order=desc'],
      ['overview: delivery summary, 24 h', '/console/api/v1/deliveries/summary?window=24h'],
      ['overview: delivery summary, 30 days', '/console/api/v1/deliveries/summary?window=30d'],
      ['webhook detail', `/console/api/v1/webhooks/${hook.id}`],
      ['keys page', '/console/api/v1/keys?limit=100&order=desc'],
      ['members page', '/console/api/v1/users?limit=100&order=desc'],
      ['notifications (bell and page)', '/console/api/notifications?limit=20'],
      ['billing: subscription (and overview plan card)', '/console/api/v1/billing/subscription'],
      ['billing: invoices', '/console/api/v1/billing/invoices?limit=24'],
      ['integrations page', '/console/api/integrations'],
      [
        'usage page, 24 h by hour',
        `/console/api/v1/usage?from=${dayAgo}&to=${hourEnd}&granularity=hour&group_by=status`,
      ],
      ['failed requests page', '/console/api/v1/requests?limit=50'],
    ];
    const rows: string[] = [];
    let worst = 0;
    for (const [name, path] of calls) {
      const times: number[] = [];
      for (let i = 0; i < N + 20; i++) {
        const s = performance.now();
        const res = await fetch(`${base}${path}`, { headers });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
        if (i >= 20) times.push(performance.now() - s);
      }
      times.sort((a, b) => a - b);
      const p99 = percentile(times, 99);
      worst = Math.max(worst, p99);
      rows.push(
        `| ${name} | ${percentile(times, 50).toFixed(1)} | ${percentile(times, 95).toFixed(1)} | ${p99.toFixed(1)} |`,
      );
    }
    const backend = pg ? 'PostgreSQL' : 'SQLite';
    console.log(
      `\nConsole page API, ${backend}, ${RESOURCES} resources + ${DELIVERIES} deliveries, ${N} sequential requests each (ms):\n`,
    );
    console.log('| call | p50 | p95 | p99 |\n|---|---|---|---|');
    console.log(rows.join('\n'));
    const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
    console.log(`\nload average (1, 5, 15 min): before ${load(loadBefore)}, after ${load(loadavg())}`);
    console.log(`\nworst p99 ${worst.toFixed(1)} ms (target ≤ 50 ms): ${worst <= 50 ? 'met' : 'NOT met'}`);
  } finally {
    child?.kill('SIGTERM');
    await storage.close();
    if (pg) {
      const admin = openStorage({ url: pg, poolSize: 1 });
      await sql.raw(`drop schema ${schema} cascade`).execute(admin.db);
      await admin.close();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
