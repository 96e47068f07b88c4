// Benchmark (docs/performance.md#method): harness plumbing: child processes (server, baseline), fresh databases per scenario, bulk seeding,
// and one autocannon run per measurement.

import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { openStorage } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/kernel/clock.js';
import { systemActor } from '../src/kernel/principal.js';
import { createServices } from '../src/services.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const CONNECTIONS = 32;

export type Backend = 'sqlite' | 'postgres';

export interface Measured {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** Server CPU time (user + system) per request, in µs: steadier than req/s on a shared machine. */
  cpuUs?: number;
  /** CPU per request of the database servers on this machine (PostgreSQL and Redis processes), in µs. */
  dbCpuUs?: number;
}

/** Processes whose CPU counts as the database's: PostgreSQL's backends and workers, and Redis. */
const DB_PROCESSES = new Set(['postgres', 'redis-server']);

/** CPU time used so far (user + system, ms) by every PostgreSQL and Redis process on this machine. */
export function databaseCpuMs(): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (!DB_PROCESSES.has(comm)) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return ticks * 10; // clock ticks of 10 ms
}

export interface Child {
  port: number;
  child: ChildProcess;
  peakRssMb(): number;
  /** CPU time used so far (user + system), in ms. */
  cpuMs(): number;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The settings of a measured `wsvc serve --api-only`: rate limits out of the way, plan limits off unless `extra` sets
 * them, a pool of 16 and Redis (own key prefix) on PostgreSQL.
 */
export function benchServerEnv(
  url: string,
  backend: Backend,
  port: number,
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    // Plan limits would put the bench workspace on `free` (100 resources, a request cap): off unless a scenario sets it.
    PLAN_LIMITS: 'off',
    ...extra,
    DATABASE_URL: url,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_LIVE: '100000000',
    RATE_LIMIT_TEST: '100000000',
    REDIS_URL: '',
  };
  if (backend === 'postgres') {
    env.DATABASE_POOL_SIZE = '16';
    if (process.env.TEST_REDIS_URL) {
      env.REDIS_URL = process.env.TEST_REDIS_URL;
      env.REDIS_KEY_PREFIX = `bench:${port}:`;
    }
  }
  return env;
}

/**
 * Spawns `node <args>` (in `cwd`, default this tree); ready when `ready` matches its output or, with `knownPort`,
 * when `healthPath` answers 2xx.
 */
export function startChild(
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp | null,
  knownPort = 0,
  nodeFlags: string[] = [],
  { healthPath = '/healthz', cwd = ROOT }: { healthPath?: string; cwd?: string } = {},
): Promise<Child> {
  const child = spawn(process.execPath, [...nodeFlags, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: 'pipe',
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let done = false;
    let stopping = false;
    const finish = (port: number) => {
      if (done) return;
      done = true;
      // Keep the tail of the output after start-up: a server that dies mid-run says why.
      let tail = '';
      const keep = (d: Buffer) => {
        tail = (tail + d.toString()).slice(-4000);
      };
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      child.once('exit', (code, signal) => {
        if (!stopping) process.stderr.write(`[bench] ${args.join(' ')} exited (${code ?? signal}) mid-run:\n${tail}\n`);
      });
      resolve({
        port,
        child,
        peakRssMb() {
          try {
            const s = readFileSync(`/proc/${child.pid}/status`, 'utf8');
            return Math.round(Number(/VmHWM:\s+(\d+)/.exec(s)?.[1] ?? 0) / 1024);
          } catch {
            return 0;
          }
        },
        cpuMs() {
          try {
            const f = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
            return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
          } catch {
            return 0;
          }
        },
        stop: () =>
          new Promise<void>((r) => {
            stopping = true;
            if (child.exitCode !== null) return r();
            child.once('exit', () => r());
            child.kill('SIGTERM');
          }),
      });
    };
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = ready?.exec(out);
      if (m) finish(Number(m[1]));
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      if (!done) reject(new Error(`child exited ${code}: ${out}`));
    });
    if (knownPort) {
      const poll = async () => {
        while (!done) {
          try {
            const r = await fetch(`http://127.0.0.1:${knownPort}${healthPath}`);
            if (r.ok) return finish(knownPort);
          } catch {}
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      void poll();
    }
  });
}

/** One autocannon run against `server`: CONNECTIONS connections cycling through `requests`. */
export async function load(
  server: Child,
  duration: number,
  requests: autocannon.Request[],
  headers: Record<string, string>,
  connections = CONNECTIONS,
): Promise<Measured> {
  const cpu0 = server.cpuMs();
  const db0 = databaseCpuMs();
  const r = await autocannon({ url: `http://127.0.0.1:${server.port}`, connections, duration, headers, requests });
  const cpu = server.cpuMs() - cpu0;
  const db = databaseCpuMs() - db0;
  return {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx + r.errors + r.timeouts,
    cpuUs: r.requests.total ? Math.round((cpu * 1000) / r.requests.total) : 0,
    dbCpuUs: r.requests.total ? Math.round((db * 1000) / r.requests.total) : 0,
  };
}

/** A fresh, migrated database holding one workspace and its live key. */
export interface BenchDb {
  backend: Backend;
  /** DATABASE_URL for the server process. */
  url: string;
  key: string;
  headers: Record<string, string>;
  workspaceId: string;
  /** Inserts `n` resources of the workspace's live environment with direct SQL; returns their ids in order. */
  bulkInsert(n: number): Promise<BulkRange>;
  /** Runs `sqlText` once on a connection of the harness; returns ms taken. */
  timeQuery(sqlText: string): Promise<number>;
  drop(): Promise<void>;
}

/** Ids of bulk-inserted resources are `res_` + a fixed prefix + a zero-padded counter, so id i is known. */
export interface BulkRange {
  count: number;
  idAt(i: number): string;
}

const BULK_PREFIX = '01JD';
function bulkId(i: number): string {
  return `res_${BULK_PREFIX}${String(i).padStart(22, '0')}`;
}

export async function freshDb(backend: Backend, dir: string, name: string): Promise<BenchDb> {
  const suffix = randomBytes(5).toString('hex');
  let url: string;
  let schema: string | undefined;
  const pgUrl = process.env.TEST_DATABASE_URL ?? '';
  if (backend === 'postgres') {
    schema = `bench_${suffix}`;
    const admin = openStorage({ url: pgUrl, poolSize: 1 });
    await sql.raw(`create schema ${schema}`).execute(admin.db);
    await admin.close();
    url = `${pgUrl}${pgUrl.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}`;
  } else {
    url = `sqlite:${join(dir, `${name.replace(/\W+/g, '_')}_${suffix}.db`)}`;
  }
  const storage = openStorage({ url, poolSize: 2, schema });
  await migrateToLatest(storage.db, storage.dialect);
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'silent',
    SECRETS_KEY: process.env.SECRETS_KEY,
  } as NodeJS.ProcessEnv);
  const s = createServices({ storage, clock: systemClock, config });
  const ws = await s.workspaces.create(s.uow.as(systemActor('cli')), {
    name: 'bench',
    adminEmail: 'bench@example.com',
  });
  await storage.close();
  const key = ws.keys.live.key;
  const workspaceId = ws.workspace.id;
  const sqlitePath = url.slice('sqlite:'.length);
  return {
    backend,
    url,
    key,
    workspaceId,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    async bulkInsert(n) {
      if (backend === 'sqlite') bulkSqlite(sqlitePath, workspaceId, n);
      else await bulkPostgres(pgUrl, schema as string, workspaceId, n);
      return { count: n, idAt: bulkId };
    },
    async timeQuery(text) {
      if (backend === 'sqlite') {
        const raw = new SqliteDatabase(sqlitePath, { readonly: true });
        try {
          const stmt = raw.prepare(text);
          const t0 = performance.now();
          stmt.all();
          return performance.now() - t0;
        } finally {
          raw.close();
        }
      }
      const st = openStorage({ url: pgUrl, poolSize: 1, schema });
      try {
        await sql.raw('select 1').execute(st.db);
        const t0 = performance.now();
        await sql.raw(text).execute(st.db);
        return performance.now() - t0;
      } finally {
        await st.close();
      }
    },
    async drop() {
      if (backend === 'postgres') {
        const admin = openStorage({ url: pgUrl, poolSize: 1 });
        await sql.raw(`drop schema ${schema} cascade`).execute(admin.db);
        await admin.close();
      } else {
        for (const s of ['', '-wal', '-shm']) rmSync(sqlitePath + s, { force: true });
      }
    },
  };
}

/** The bulk seed bypasses the repository, so it rebuilds the workspace's meta.total counters itself. */
const RECOUNT = `insert into resource_counts (workspace_id, env, status, type, slot, n)
  select workspace_id, env, status, type, 0, count(*) from resources where workspace_id = ?
  group by workspace_id, env, status, type`;

/** Direct inserts in big transactions; the durability pragma is relaxed for the seed only (the server reopens it durable: WAL + synchronous=FULL). */
function bulkSqlite(path: string, workspaceId: string, n: number): void {
  const raw = new SqliteDatabase(path);
  raw.pragma('synchronous = OFF');
  const insert = raw.prepare(
    `insert into resources (id, workspace_id, env, name, type, status, metadata, created_at, updated_at)
     values (?, ?, 'live', ?, ?, ?, ?, ?, ?)`,
  );
  const types = ['standard', 'premium', 'custom'];
  const start = Date.now() - n;
  const batch = raw.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const at = new Date(start + i).toISOString();
      insert.run(
        bulkId(i),
        workspaceId,
        `r${i}`,
        types[i % 3],
        i % 10 === 0 ? 'archived' : 'active',
        `{"i":"${i}"}`,
        at,
        at,
      );
    }
  });
  for (let i = 0; i < n; i += 100_000) batch(i, Math.min(n, i + 100_000));
  // (Older schemas, before migration 004, have no counts table: lets the bench A/B older commits.)
  if (raw.prepare("select 1 from sqlite_master where name = 'resource_counts'").get()) {
    raw.prepare('delete from resource_counts where workspace_id = ?').run(workspaceId);
    raw.prepare(RECOUNT).run(workspaceId);
  }
  raw.pragma('wal_checkpoint(TRUNCATE)');
  raw.close();
}

async function bulkPostgres(pgUrl: string, schema: string, workspaceId: string, n: number): Promise<void> {
  const st = openStorage({ url: pgUrl, poolSize: 1, schema, statementTimeoutMs: 0 });
  try {
    const step = 250_000;
    for (let i = 0; i < n; i += step) {
      await sql`insert into resources (id, workspace_id, env, name, type, status, metadata, created_at, updated_at)
        select 'res_' || ${BULK_PREFIX} || lpad(g::text, 22, '0'), ${workspaceId}, 'live', 'r' || g,
          (array['standard','premium','custom'])[g % 3 + 1], case when g % 10 = 0 then 'archived' else 'active' end,
          jsonb_build_object('i', g::text), now() - make_interval(secs => (${n} - g) / 1000.0),
          now() - make_interval(secs => (${n} - g) / 1000.0)
        from generate_series(${i}::int, ${Math.min(n, i + step) - 1}::int) g`.execute(st.db);
    }
    await sql`delete from resource_counts where workspace_id = ${workspaceId}`.execute(st.db);
    await sql.raw(RECOUNT.replace('?', `'${workspaceId}'`)).execute(st.db);
    await sql`analyze resources`.execute(st.db);
  } finally {
    await st.close();
  }
}

/** Creates `n` resources through the API (the slow, realistic way, for small seeds). */
export async function createViaApi(port: number, headers: Record<string, string>, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/v1/resources`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: `r${i}`, type: 'standard', metadata: { i: String(i) } }),
    });
    if (res.status !== 201) throw new Error(`seed create failed: ${res.status} ${await res.text()}`);
    ids.push(((await res.json()) as { data: { id: string } }).data.id);
  }
  return ids;
}

/** Follows next_cursor from the page at `offset`; returns the cursors of the `pages` pages after it. */
export async function collectCursors(
  port: number,
  headers: Record<string, string>,
  limit: number,
  pages: number,
  offset = 0,
): Promise<string[]> {
  const out: string[] = [];
  let url = `/v1/resources?limit=${limit}&offset=${offset}`;
  for (let i = 0; i < pages; i++) {
    const res = await fetch(`http://127.0.0.1:${port}${url}`, { headers });
    const body = (await res.json()) as { meta: { next_cursor: string | null } };
    const c = body.meta.next_cursor;
    if (!c) break;
    out.push(c);
    url = `/v1/resources?limit=${limit}&cursor=${encodeURIComponent(c)}`;
  }
  return out;
}
