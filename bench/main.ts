// Benchmark (docs/performance.md#method): harness: each scenario runs against a fresh database (SQLite file with WAL + synchronous=FULL per
// the durable default; PostgreSQL schema + Redis when TEST_DATABASE_URL/TEST_REDIS_URL are set), served by the real server
// in a child process; autocannon drives it from this process with 32 connections.
import { execSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { type Backend, type Child, freePort, freshDb, load, type Measured, ROOT, startChild } from './harness.js';
import { summariseProfiles } from './profile.js';
import { SCENARIOS, type ScenarioContext } from './scenarios.js';

export interface Row {
  backend: Backend | 'none';
  scenario: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  rssMb: number;
  ratio: number;
  /** Server CPU µs per request. */
  cpuUs?: number;
}

export interface BenchOptions {
  duration: number;
  quick: boolean;
  /** Default: SQLite only. */
  backends?: Backend[];
  /** Only scenarios whose name contains this. */
  only?: string;
  /** Size of the large workspace (default 1,000,000). */
  large?: number;
  /** Write `node --cpu-prof` profiles of each server here and print a summary. */
  profileDir?: string;
  /** Node flags of the server process (default SERVER_FLAGS). */
  serverFlags?: string[];
  /** Run each measurement this many times and keep the best (highest req/s) run (default 1). */
  repeat?: number;
}

/**
 * How the server is started, as docs/performance.md recommends for production: a young generation of
 * 4 MB semi-spaces keeps peak RSS under load near the idle RSS (V8's default lets it grow to 16 MB
 * semi-spaces under this allocation rate, +40..70 MB).
 */
export const SERVER_FLAGS = ['--max-semi-space-size=4'];

/** The sample body of the baseline: the JSON a GET /v1/resources/{id} returns. */
function sampleBody(): string {
  const now = new Date().toISOString();
  return JSON.stringify({
    data: {
      id: 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
      name: 'bench resource',
      type: 'standard',
      status: 'active',
      metadata: { k: 'v' },
      workspace_id: 'ws_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
      created_at: now,
      updated_at: now,
    },
  });
}

async function startApi(url: string, backend: Backend, serverFlags: string[], profileDir?: string): Promise<Child> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
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
  const flags = [...serverFlags, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
  return startChild(['bin/wsvc.js', 'serve', '--api-only'], env, null, port, flags);
}

export async function runBench(opts: BenchOptions): Promise<Row[]> {
  const rows: Row[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-bench-'));
  const backends = opts.backends ?? ['sqlite'];
  try {
    const base = await startChild(['bin/bench-baseline.js'], { PORT: '0', BENCH_BODY: sampleBody() }, /READY (\d+)/);
    try {
      let m: Measured | null = null;
      for (let i = 0; i < (opts.repeat ?? 1); i++) {
        const r = await load(base, opts.duration, [{ method: 'GET', path: '/baseline' }], {});
        if (!m || r.rps > m.rps) m = r;
      }
      m = m as Measured;
      rows.push({ backend: 'none', scenario: 'baseline (bare Fastify)', ...m, rssMb: base.peakRssMb(), ratio: 1 });
    } finally {
      await base.stop();
    }
    for (const backend of backends) {
      for (const sc of SCENARIOS) {
        if (opts.quick && !sc.quick) continue;
        if (opts.only && !sc.name.includes(opts.only)) continue;
        const db = await freshDb(backend, dir, sc.name);
        try {
          const t0 = Date.now();
          const seeded = sc.seed ? await sc.seed(db, opts.quick, opts.large ?? 1_000_000) : null;
          if (seeded && seeded.count >= 100_000) {
            process.stderr.write(`[bench] ${backend}: seeded ${seeded.count} resources in ${Date.now() - t0} ms\n`);
          }
          if (sc.standalone) {
            for (const r of await sc.standalone(db, opts.quick)) rows.push({ backend, ...r, ratio: 0 });
            continue;
          }
          const server = await startApi(db.url, backend, opts.serverFlags ?? SERVER_FLAGS, opts.profileDir);
          let warmed = false;
          try {
            const ctx: ScenarioContext = {
              db,
              port: server.port,
              duration: opts.duration,
              quick: opts.quick,
              seeded,
              async measure(name, requests, o) {
                // The first measurement of a fresh server would include JIT warm-up and cold caches.
                if (!warmed) await load(server, 1, requests, db.headers, o?.connections);
                warmed = true;
                const runs: Measured[] = [];
                for (let i = 0; i < (opts.repeat ?? 1); i++) {
                  runs.push(await load(server, opts.duration, requests, db.headers, o?.connections));
                }
                // Best run by req/s, but a failed request in any run is reported.
                const best = runs.reduce((a, b) => (b.rps > a.rps ? b : a));
                const m = { ...best, non2xx: Math.max(...runs.map((r) => r.non2xx)) };
                rows.push({ backend, scenario: name, ...m, rssMb: server.peakRssMb(), ratio: 0 });
                return m;
              },
              record(name, m) {
                rows.push({ backend, scenario: name, ...m, rssMb: 0, ratio: 0 });
              },
            };
            await sc.run?.(ctx);
          } finally {
            await server.stop();
          }
        } finally {
          await db.drop();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const baselineRps = rows[0]?.rps ?? 0;
  for (const r of rows) r.ratio = baselineRps ? Math.round((r.rps / baselineRps) * 100) / 100 : 0;
  return rows;
}

export function toMarkdown(rows: Row[]): string {
  const head =
    '| backend | scenario | req/s | p50 ms | p99 ms | non-2xx | peak RSS MB | CPU µs/req | × baseline |\n|---|---|---:|---:|---:|---:|---:|---:|---:|';
  return [
    head,
    ...rows.map(
      (r) =>
        `| ${r.backend} | ${r.scenario} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.rssMb || '–'} | ${r.cpuUs ?? '–'} | ${r.ratio} |`,
    ),
  ].join('\n');
}

export async function main(argv: string[]): Promise<void> {
  const program = new Command('bench')
    .option('--duration <s>', 'seconds per measurement', (v) => Number(v), 6)
    .option('--quick', 'only the smoke scenarios (baseline, GET, list, POST)', false)
    .option('--only <text>', 'only scenarios whose name contains this')
    .option('--large <n>', 'resources in the large workspace', (v) => Number(v), 1_000_000)
    .option('--backend <name>', 'sqlite, postgres or all (default: all that are configured)')
    .option('--profile', 'run each server under node --cpu-prof and print where the time goes', false)
    .option('--repeat <n>', 'run each measurement n times and keep the best', (v) => Number(v), 1)
    .option('--server-flags <flags>', `node flags of the server (default "${SERVER_FLAGS.join(' ')}")`)
    .option('--no-save', 'do not write bench/results/');
  program.parse(argv);
  const o = program.opts<{
    duration: number;
    quick: boolean;
    only?: string;
    large: number;
    backend?: string;
    profile: boolean;
    repeat: number;
    serverFlags?: string;
    save: boolean;
  }>();
  const serverFlags = o.serverFlags === undefined ? SERVER_FLAGS : o.serverFlags.split(/\s+/).filter(Boolean);
  const pg = Boolean(process.env.TEST_DATABASE_URL);
  let backends: Backend[] = pg ? ['sqlite', 'postgres'] : ['sqlite'];
  if (o.backend === 'sqlite' || o.backend === 'postgres') backends = [o.backend];
  if (backends.includes('postgres') && !pg) throw new Error('--backend postgres needs TEST_DATABASE_URL');
  const profileDir = o.profile ? mkdtempSync(join(tmpdir(), 'wsvc-prof-')) : undefined;
  const rows = await runBench({
    duration: o.duration,
    quick: o.quick,
    backends,
    only: o.only,
    large: o.large,
    profileDir,
    serverFlags,
    repeat: o.repeat,
  });
  let commit = 'unknown';
  try {
    commit = execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim();
    if (execSync('git status --porcelain -- src bench', { cwd: ROOT }).toString().trim()) commit += '+dirty';
  } catch {}
  const redis = backends.includes('postgres') ? (process.env.TEST_REDIS_URL ? ' (+ Redis rate limits)' : '') : '';
  const machine =
    `${cpus().length} cores, Node ${process.version}, commit ${commit}; SQLite WAL+synchronous=FULL` +
    `${backends.includes('postgres') ? `, PostgreSQL${redis}` : ''}; server: node ${serverFlags.join(' ') || '(V8 defaults)'}; ` +
    `32 connections unless noted, ${o.duration} s per row${o.repeat > 1 ? `, best of ${o.repeat}` : ''}`;
  const md = `${machine}\n\n${toMarkdown(rows)}\n`;
  process.stdout.write(md);
  if (profileDir) {
    process.stdout.write(`\n${summariseProfiles(profileDir)}\n`);
    process.stdout.write(`profiles kept in ${profileDir}\n`);
  }
  if (o.save) {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
    writeFileSync(
      join(ROOT, 'bench/results', `${stamp}.json`),
      JSON.stringify({ machine, commit, cores: cpus().length, node: process.version, rows }, null, 2),
    );
    writeFileSync(join(ROOT, 'bench/results', `${stamp}.md`), md);
  }
}
