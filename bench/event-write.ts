// Benchmark (docs/performance.md, "The receivers of an event, cached"): a POST /v1/resources through Fastify's
// inject (no sockets, no other process), 32 at once (one group commit on SQLite, as under load), in CPU µs of this process (`process.cpuUsage`); on
// PostgreSQL also the statements sent to the server per POST (every pg query call, BEGIN and COMMIT included, the
// audit numbering's transaction after the commit too), by kind. Two workspaces: one with no webhook and no
// integration, one with 2 enabled webhooks and 1 Slack integration (the events are queued, never sent here).
// Run: `node --import tsx bench/event-write.ts` (SQLite), with TEST_DATABASE_URL for PostgreSQL; EVENT_WRITE_N
// (default 2048, a multiple of 32) POSTs per round, EVENT_WRITE_ROUNDS (default 5) rounds alternating the two workspaces.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openStorage, type Storage } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/kernel/clock.js';
import { integrationsRepository } from '../src/modules/integrations/integrations.repository.js';
import { deliveriesRepository } from '../src/modules/webhooks/deliveries.repository.js';
import { createServices } from '../src/services.js';

// Every pg query call reaches the server as one round trip; a simple-query string of several statements (held
// deferred statements, src/db/postgres.ts) is counted once as a round trip and per statement by kind.
const statements = new Map<string, number>();
let roundTrips = 0;
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const a = args[0] as string | { text?: string };
  const text = typeof a === 'string' ? a : (a?.text ?? '');
  roundTrips += 1;
  for (const part of typeof a === 'string' ? text.split(';\n') : [text]) {
    const kind = part.trim().split(/\s+/).slice(0, 3).join(' ').toLowerCase().slice(0, 40);
    statements.set(kind, (statements.get(kind) ?? 0) + 1);
  }
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

const pgUrl = process.env.TEST_DATABASE_URL;
const N = Number(process.env.EVENT_WRITE_N ?? 2048);
const ROUNDS = Number(process.env.EVENT_WRITE_ROUNDS ?? 5);
const dir = mkdtempSync(join(tmpdir(), 'wsvc-event-write-'));
const schema = `bench_${randomBytes(5).toString('hex')}`;
let url: string;
let storage: Storage;
if (pgUrl) {
  url = pgUrl;
  const admin = openStorage({ url: pgUrl, poolSize: 1 });
  await sql.raw(`create schema ${schema}`).execute(admin.db);
  await admin.close();
  storage = openStorage({ url: pgUrl, poolSize: 5, schema });
} else {
  url = `sqlite:${join(dir, 'event-write.db')}`;
  storage = openStorage({ url });
}
try {
  await migrateToLatest(storage.db, storage.dialect);
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_LIVE: '100000000',
    PLAN_LIMITS: 'off',
  } as NodeJS.ProcessEnv);
  const resolveHost = async () => ['93.184.216.34'];
  const services = createServices({ storage, clock: systemClock, config, resolveHost });
  const app = await buildApp({ config, storage, services });
  await app.ready();
  const workspace = async (name: string, receivers: boolean) => {
    const ws = await services.workspaces.create({ name, adminEmail: `${name}@example.com` });
    const verified = await services.keyRegistry.verify(`Bearer ${ws.keys.live.key}`);
    if (!verified.ok) throw new Error('key did not verify');
    if (receivers) {
      const p = verified.principal;
      await services.webhooks.create(p, { url: 'https://receiver.example.com/a', events: ['*'] });
      await services.webhooks.create(p, { url: 'https://receiver.example.com/b', events: ['resource.created'] });
      await services.integrations.create(p, {
        kind: 'slack',
        url: 'https://hooks.slack.com/services/T000/B000/benchsecret1234',
        env: 'live',
        events: ['*'],
        categories: [],
      });
    }
    return {
      name,
      id: ws.workspace.id,
      headers: { authorization: `Bearer ${ws.keys.live.key}`, 'content-type': 'application/json' },
    };
  };
  const sides = [await workspace('none', false), await workspace('receivers', true)];
  const payload = JSON.stringify({ name: 'x', type: 'standard', metadata: { a: 'b' } });
  const post = async (headers: Record<string, string>) => {
    const res = await app.inject({ method: 'POST', url: '/v1/resources', headers, payload });
    if (res.statusCode !== 201) throw new Error(`POST answered ${res.statusCode}: ${res.body}`);
  };
  for (const s of sides) for (let i = 0; i < N / 5; i++) await post(s.headers); // warm-up
  const cpu: Record<string, number[]> = { none: [], receivers: [] };
  const perPost: Record<string, Map<string, number>> = {};
  const tripsPerPost: Record<string, number> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
      statements.clear();
      roundTrips = 0;
      const c0 = process.cpuUsage();
      for (let i = 0; i < N; i += 32) await Promise.all(Array.from({ length: 32 }, () => post(s.headers)));
      const c = process.cpuUsage(c0);
      cpu[s.name]?.push((c.user + c.system) / N);
      perPost[s.name] = new Map(statements);
      tripsPerPost[s.name] = roundTrips / N;
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  process.stdout.write(`${pgUrl ? 'postgres' : 'sqlite'}: ${ROUNDS} rounds of ${N} POSTs per workspace\n`);
  for (const s of sides) {
    const xs = cpu[s.name] ?? [];
    process.stdout.write(
      `  ${s.name.padEnd(10)} CPU µs/POST median ${median(xs).toFixed(0)} (${xs.map((x) => x.toFixed(0)).join(', ')})\n`,
    );
    const counts = perPost[s.name];
    if (pgUrl && counts) {
      const total = [...counts.values()].reduce((a, b) => a + b, 0);
      process.stdout.write(`    round trips per POST: ${(tripsPerPost[s.name] ?? NaN).toFixed(2)}\n`);
      process.stdout.write(`    statements per POST: ${(total / N).toFixed(2)}\n`);
      // `execute wsvc_qN(…)` by the SQL it runs.
      const named = new Map([...(storage.dialect.statementNames ?? [])].map(([text, name]) => [name, text]));
      const byKind = new Map<string, number>();
      for (const [kind, n] of counts) {
        const m = /^execute (wsvc_q\d+)/.exec(kind);
        const text = m?.[1] ? named.get(m[1]) : undefined;
        const k = text ? `execute: ${text.split(/\s+/).slice(0, 3).join(' ').toLowerCase().slice(0, 40)}` : kind;
        byKind.set(k, (byKind.get(k) ?? 0) + n);
      }
      for (const [kind, n] of [...byKind].sort((a, b) => b[1] - a[1])) {
        process.stdout.write(`      ${(n / N).toFixed(2).padStart(5)}  ${kind}\n`);
      }
    }
  }
  // What a cache hit saves: the two reads each event made (outside a transaction here: SQLite's cheapest path).
  const reads = async (workspaceId: string) => {
    await integrationsRepository.enabledOf(storage.db, workspaceId);
    await deliveriesRepository.subscribers(storage.db, { workspaceId, env: 'live' });
  };
  for (const s of sides) {
    const n = pgUrl ? 2000 : 50_000;
    for (let i = 0; i < n / 5; i++) await reads(s.id);
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await reads(s.id);
    const c = process.cpuUsage(c0);
    process.stdout.write(
      `  ${s.name.padEnd(10)} the two reads alone: ${((c.user + c.system) / n).toFixed(1)} µs CPU\n`,
    );
  }
  await app.close();
} finally {
  await storage.close();
  if (pgUrl) {
    const cleanup = openStorage({ url: pgUrl, poolSize: 1 });
    await sql.raw(`drop schema ${schema} cascade`).execute(cleanup.db);
    await cleanup.close();
  }
  rmSync(dir, { recursive: true, force: true });
}
