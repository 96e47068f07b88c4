// Issue 5 harness: each scenario runs against a fresh SQLite file (WAL + synchronous=FULL, D20) served by
// the real server in a child process; autocannon drives it from this process with 32 connections.
import { type ChildProcess, execSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Command } from 'commander';
import { loadConfig } from '../src/config.js';
import { openStorage } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/lib/clock.js';
import { createServices } from '../src/services.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface Row {
  scenario: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  rssMb: number;
  ratio: number;
}

interface Server {
  port: number;
  child: ChildProcess;
  peakRssMb(): number;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

function startChild(args: string[], env: NodeJS.ProcessEnv, ready: RegExp | null, knownPort = 0): Promise<Server> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: 'pipe' });
  return new Promise((resolve, reject) => {
    let out = '';
    let done = false;
    const finish = (port: number) => {
      if (done) return;
      done = true;
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.stdout?.resume();
      child.stderr?.resume();
      resolve({
        port,
        child,
        peakRssMb() {
          try {
            const s = readFileSync(`/proc/${child.pid}/status`, 'utf8');
            const kb = Number(/VmHWM:\s+(\d+)/.exec(s)?.[1] ?? 0);
            return Math.round(kb / 1024);
          } catch {
            return 0;
          }
        },
        stop: () =>
          new Promise<void>((r) => {
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
            const r = await fetch(`http://127.0.0.1:${knownPort}/healthz`);
            if (r.ok) return finish(knownPort);
          } catch {}
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      void poll();
    }
  });
}

async function seed(url: string, resources: number) {
  const config = loadConfig({ DATABASE_URL: url, LOG_LEVEL: 'silent' } as NodeJS.ProcessEnv);
  const storage = openStorage({ url, poolSize: 2 });
  try {
    await migrateToLatest(storage.db, storage.dialect);
    const s = createServices({ storage, clock: systemClock, config });
    const ws = await s.workspaces.create({ name: 'bench', adminEmail: 'bench@example.com' });
    const key = ws.keys.live.key;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    return { key, headers, workspaceId: ws.workspace.id, resources };
  } finally {
    await storage.close();
  }
}

async function load(
  port: number,
  duration: number,
  requests: autocannon.Request[],
  headers: Record<string, string>,
): Promise<{ rps: number; p50: number; p99: number; non2xx: number }> {
  const r = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: 32,
    duration,
    headers,
    requests,
  });
  return {
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx + r.errors + r.timeouts,
  };
}

export async function runBench(opts: { duration: number; quick: boolean }): Promise<Row[]> {
  const rows: Row[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-bench-'));
  let baselineRps = 0;
  const scenario = async (
    name: string,
    build: (
      port: number,
      headers: Record<string, string>,
    ) => Promise<{ requests: autocannon.Request[]; headers?: Record<string, string> }>,
  ) => {
    const url = `sqlite:${join(dir, `${name.replace(/\W+/g, '_')}.db`)}`;
    const seeded = await seed(url, 0);
    const port = await freePort();
    const server = await startChild(
      ['bin/wsvc.js', 'serve', '--api-only'],
      {
        DATABASE_URL: url,
        PORT: String(port),
        LOG_LEVEL: 'warn',
        RATE_LIMIT_LIVE: '100000000',
        RATE_LIMIT_TEST: '100000000',
      },
      null,
      port,
    );
    try {
      const plan = await build(server.port, seeded.headers);
      const m = await load(server.port, opts.duration, plan.requests, plan.headers ?? seeded.headers);
      rows.push({ scenario: name, ...m, rssMb: server.peakRssMb(), ratio: 0 });
    } finally {
      await server.stop();
    }
  };
  try {
    // Baseline: same JSON a GET would return, from memory.
    const sample = JSON.stringify({
      data: {
        id: 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
        name: 'bench resource',
        type: 'standard',
        status: 'active',
        metadata: { k: 'v' },
        workspace_id: 'wsp_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
        created_at: new Date().toISOString(),
        updated_at: new Date().toISOString(),
      },
    });
    const base = await startChild(['bin/bench-baseline.js'], { PORT: '0', BENCH_BODY: sample }, /READY (\d+)/);
    try {
      const m = await load(base.port, opts.duration, [{ method: 'GET', path: '/baseline' }], {});
      baselineRps = m.rps;
      rows.push({ scenario: 'baseline (bare Fastify)', ...m, rssMb: base.peakRssMb(), ratio: 1 });
    } finally {
      await base.stop();
    }
    const create = async (port: number, headers: Record<string, string>, n: number) => {
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
    };
    const newBody = JSON.stringify({ name: 'bench', type: 'standard', metadata: { a: 'b' } });
    await scenario('GET /v1/resources/{id}', async (port, h) => {
      const [id] = await create(port, h, 1);
      return { requests: [{ method: 'GET', path: `/v1/resources/${id}` }] };
    });
    await scenario('GET /v1/resources?limit=20', async (port, h) => {
      await create(port, h, opts.quick ? 40 : 200);
      return { requests: [{ method: 'GET', path: '/v1/resources?limit=20' }] };
    });
    await scenario('POST /v1/resources', async () => ({
      requests: [{ method: 'POST', path: '/v1/resources', body: newBody }],
    }));
    if (!opts.quick) {
      await scenario('PUT /v1/resources/{id}', async (port, h) => {
        const [id] = await create(port, h, 1);
        return {
          requests: [{ method: 'PUT', path: `/v1/resources/${id}`, body: JSON.stringify({ name: 'renamed' }) }],
        };
      });
      await scenario('mix 80% GET / 20% POST', async (port, h) => {
        const [id] = await create(port, h, 1);
        const get = { method: 'GET' as const, path: `/v1/resources/${id}` };
        const post = { method: 'POST' as const, path: '/v1/resources', body: newBody };
        return { requests: [get, get, get, get, post] };
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  for (const r of rows) r.ratio = baselineRps ? Math.round((r.rps / baselineRps) * 100) / 100 : 0;
  return rows;
}

export function toMarkdown(rows: Row[]): string {
  const head =
    '| scenario | req/s | p50 ms | p99 ms | non-2xx | peak RSS MB | × baseline |\n|---|---:|---:|---:|---:|---:|---:|';
  return [
    head,
    ...rows.map((r) => `| ${r.scenario} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.rssMb} | ${r.ratio} |`),
  ].join('\n');
}

export async function main(argv: string[]): Promise<void> {
  const program = new Command('bench')
    .option('--duration <s>', 'seconds per scenario', (v) => Number(v), 10)
    .option('--quick', 'fewer scenarios (smoke run)', false)
    .option('--no-save', 'do not write bench/results/');
  program.parse(argv);
  const o = program.opts<{ duration: number; quick: boolean; save: boolean }>();
  const rows = await runBench({ duration: o.duration, quick: o.quick });
  let commit = 'unknown';
  try {
    commit = execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim();
  } catch {}
  const machine = `${cpus().length} cores, Node ${process.version}, commit ${commit}, SQLite WAL+synchronous=FULL (D20), 32 connections, ${o.duration}s/scenario`;
  const md = `${machine}\n\n${toMarkdown(rows)}\n`;
  process.stdout.write(`${md}`);
  if (o.save) {
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    writeFileSync(join(ROOT, 'bench/results', `${stamp}.json`), JSON.stringify({ machine, commit, rows }, null, 2));
    writeFileSync(join(ROOT, 'bench/results', `${stamp}.md`), md);
  }
}
