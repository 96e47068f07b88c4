// Benchmark harness (docs/performance.md#method): each scenario runs against a fresh database
// (SQLite file with WAL + synchronous=FULL, the durable default; PostgreSQL schema + Redis when
// TEST_DATABASE_URL/TEST_REDIS_URL are set), served by the real server in a child process; autocannon drives
// it from this process with 32 connections. Each row is measured in interleaved rounds against the
// bare-Fastify baseline (bench/report.ts summarises them).
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { Command } from 'commander';
import { prepareReference, runAgainst } from './against.js';
import {
  type Backend,
  benchServerEnv,
  type Child,
  freePort,
  freshDb,
  load,
  type Measured,
  ROOT,
  startChild,
} from './harness.js';
import { preparePeer, runPeer } from './peer.js';
import { probeList, runProbe } from './probes/index.js';
import { summariseProfiles } from './profile.js';
import {
  baselineRow,
  type Machine,
  machineInfo,
  machineLine,
  type Round,
  type Row,
  summarise,
  toMarkdown,
} from './report.js';
import { benchPlansFile, SCENARIOS, type ScenarioContext } from './scenarios.js';

export type { Row } from './report.js';

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
  /** Interleaved baseline/candidate rounds per measurement (default 3). */
  rounds?: number;
  /** Called after each row (progress on stderr). */
  onRow?(row: Row): void;
}

/**
 * How the server is started, as production should be (docs/performance.md#memory-the-young-generation): a young generation of
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

async function startApi(
  url: string,
  backend: Backend,
  serverFlags: string[],
  profileDir?: string,
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<Child> {
  const port = await freePort();
  const env = benchServerEnv(url, backend, port, extraEnv);
  const flags = [...serverFlags, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
  return startChild(['bin/wsvc.js', 'serve', '--api-only'], env, null, port, flags);
}

/** The baseline's request: the same JSON a GET by id returns, from memory. */
const BASELINE_REQUESTS: autocannon.Request[] = [{ method: 'GET', path: '/baseline' }];

/**
 * Every measurement is `rounds` interleaved pairs against the bare-Fastify baseline (baseline,
 * candidate, baseline, candidate, …, same connections), so a change in the machine's load hits both
 * sides of each ratio; a row reports the median ratio and its spread.
 */
/** The folder of a scenario's server profile: backend and scenario name, in characters a path takes. */
export function profileFolder(backend: Backend, scenario: string): string {
  return `${backend}-${scenario.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`;
}

export async function runBench(opts: BenchOptions): Promise<Row[]> {
  const rows: Row[] = [];
  const baseRounds: Measured[] = [];
  const rounds = Math.max(1, opts.rounds ?? 3);
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-bench-'));
  const backends = opts.backends ?? ['sqlite'];
  const push = (row: Row) => {
    rows.push(row);
    opts.onRow?.(row);
  };
  const base = await startChild(['bin/bench-baseline.js'], { PORT: '0', BENCH_BODY: sampleBody() }, /READY (\d+)/);
  try {
    await load(base, 1, BASELINE_REQUESTS, {});
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
            for (const r of await sc.standalone(db, opts.quick)) push({ backend, ...r, note: 'once, not interleaved' });
            continue;
          }
          // One profile folder per server, named after its scenario (bench/profile.ts prints them by name).
          const profileTo = opts.profileDir && join(opts.profileDir, profileFolder(backend, sc.name));
          const server = await startApi(db.url, backend, opts.serverFlags ?? SERVER_FLAGS, profileTo, sc.serverEnv?.());
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
                const done: Round[] = [];
                for (let i = 0; i < rounds; i++) {
                  const b = await load(base, opts.duration, BASELINE_REQUESTS, {}, o?.connections);
                  const c = await load(server, opts.duration, requests, db.headers, o?.connections);
                  baseRounds.push(b);
                  done.push({ base: b, cand: c, ratio: b.rps ? c.rps / b.rps : 0 });
                }
                const row = summarise(backend, name, done, server.peakRssMb());
                push(row);
                return { rps: row.rps, p50: row.p50, p99: row.p99, non2xx: row.non2xx, cpuUs: row.cpuUs };
              },
              async compare(name, requests, otherEnv) {
                // A second server on the same database with `otherEnv`; rounds alternate which goes first.
                const other = await startApi(db.url, backend, opts.serverFlags ?? SERVER_FLAGS, undefined, otherEnv);
                try {
                  await load(server, 1, requests, db.headers);
                  await load(other, 1, requests, db.headers);
                  const done: Round[] = [];
                  for (let i = 0; i < rounds; i++) {
                    const first = i % 2 === 0;
                    const a = first ? await load(server, opts.duration, requests, db.headers) : undefined;
                    const b = await load(other, opts.duration, requests, db.headers);
                    const c = a ?? (await load(server, opts.duration, requests, db.headers));
                    done.push({ base: b, cand: c, ratio: b.rps ? c.rps / b.rps : 0 });
                  }
                  const off = summarise(
                    backend,
                    `${name}: reference`,
                    done.map((r) => ({ base: r.base, cand: r.base, ratio: 1 })),
                    other.peakRssMb(),
                  );
                  push({
                    ...off,
                    ratio: undefined,
                    ratioMin: undefined,
                    ratioMax: undefined,
                    spread: undefined,
                    note: 'the reference of the next row',
                  });
                  push({
                    ...summarise(backend, name, done, server.peakRssMb()),
                    note: 'ratio: to the reference row, interleaved',
                  });
                } finally {
                  await other.stop();
                }
              },
              record(name, m) {
                push({ backend, scenario: name, ...m, rssMb: 0, note: m.note ?? 'direct SQL, not interleaved' });
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
    rows.unshift(baselineRow(baseRounds, base.peakRssMb()));
    await base.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

export async function main(argv: string[]): Promise<void> {
  // `--probe <name> [its options]`: everything after the name is the probe's own (bench/probes/index.ts).
  const at = argv.indexOf('--probe');
  if (at >= 0) {
    const name = argv[at + 1];
    if (name === 'list') process.stdout.write(`${probeList()}\n`);
    else await runProbe(name, argv.slice(at + 2));
    return;
  }
  const program = new Command('bench')
    .option('--duration <s>', 'seconds per measurement (each side of each round)', (v) => Number(v), 5)
    .option(
      '--rounds <n>',
      'interleaved baseline/candidate rounds per row (at least 3 for a result)',
      (v) => Number(v),
      3,
    )
    .option('--quick', 'only the smoke scenarios (GET, list, POST, a small fan-out)', false)
    .option('--only <text>', 'only scenarios whose name contains this')
    .option('--large <n>', 'resources in the large workspace', (v) => Number(v), 1_000_000)
    .option('--backend <name>', 'sqlite, postgres or all (default: all that are configured)')
    .option('--profile', 'run each server under node --cpu-prof and print where the time goes', false)
    .option('--server-flags <flags>', `node flags of the server (default "${SERVER_FLAGS.join(' ')}")`)
    .option(
      '--against <git ref>',
      'measure this tree against another commit (e.g. HEAD~1, main) in interleaved rounds, instead of the scenarios',
    )
    .option(
      '--peer',
      'measure this tree against a peer (Directus, installed in bench/peer on first use): create, read by id, list of 20',
      false,
    )
    .option(
      '--plan-limits',
      'with --against: plan limits on, as in production, the workspace on a paying plan (scale) where the tree has billing',
      false,
    )
    .option(
      '--probe <name>',
      'run one probe instead of the scenarios, with the options that follow its name (`--probe list` names them)',
    )
    .option('--no-save', 'do not write bench/results/')
    .option('--no-build', 'measure dist/ as it is (default: compile src/ into dist/ first)');
  program.parse(argv);
  const o = program.opts<{
    duration: number;
    rounds: number;
    quick: boolean;
    only?: string;
    large: number;
    backend?: string;
    profile: boolean;
    serverFlags?: string;
    against?: string;
    peer: boolean;
    planLimits: boolean;
    save: boolean;
    build: boolean;
  }>();
  // The server runs the compiled dist/ (bin/wsvc.js): bring it up to date with src/ so a run never measures stale code.
  if (o.build) {
    process.stderr.write('[bench] compiling src/ into dist/ (tsc -p tsconfig.build.json)\n');
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: ROOT,
      stdio: 'inherit',
    });
  }
  const serverFlags = o.serverFlags === undefined ? SERVER_FLAGS : o.serverFlags.split(/\s+/).filter(Boolean);
  const pg = Boolean(process.env.TEST_DATABASE_URL);
  let backends: Backend[] = pg ? ['sqlite', 'postgres'] : ['sqlite'];
  if (o.backend === 'sqlite' || o.backend === 'postgres') backends = [o.backend];
  if (backends.includes('postgres') && !pg) throw new Error('--backend postgres needs TEST_DATABASE_URL');
  // PostgreSQL needs SECRETS_KEY (docs/settings.md#secrets-at-rest): a fresh key for this run's servers and their
  // `wsvc` seeding, every one of them the same, unless one is set.
  if (backends.includes('postgres')) process.env.SECRETS_KEY ||= randomBytes(32).toString('base64');
  const profileDir = o.profile ? mkdtempSync(join(tmpdir(), 'wsvc-prof-')) : undefined;
  const machine = machineInfo(ROOT);
  process.stderr.write(`[bench] ${machineLine(machine)}\n`);
  const onRow = (r: Row) =>
    process.stderr.write(
      `[bench] ${r.backend} ${r.scenario}: ${r.rps} req/s, ${r.cpuUs ?? '–'} µs CPU/req, × ${r.ratio ?? '–'}\n`,
    );
  if (o.against) {
    const ref = prepareReference(o.against, (line) => process.stderr.write(`[bench] ${line}\n`));
    let abRows: Row[];
    try {
      const plansFile = o.planLimits ? benchPlansFile() : undefined;
      abRows = await runAgainst({
        ref,
        backends,
        duration: o.duration,
        rounds: o.rounds,
        only: o.only,
        plansFile,
        onRow,
      });
    } finally {
      ref.remove();
    }
    machine.loadAfter = loadavg().map((x) => Math.round(x * 100) / 100);
    const setup =
      `this tree (${machine.commit}) against ${ref.label}, each server on its own fresh database; ` +
      `${o.rounds} interleaved rounds of ${o.duration} s per row, alternating which goes first; 32 connections` +
      (o.planLimits ? '; plan limits on, the workspace on a paying plan (scale) where the tree has billing' : '');
    const md = `${machineLine(machine)}\n${setup}\n\n${toMarkdown(abRows, `× ${o.against}`)}\n`;
    process.stdout.write(md);
    save(o.save, machine, setup, argv, abRows, md);
    return;
  }
  if (o.peer) {
    const peer = preparePeer((line) => process.stderr.write(`[bench] ${line}\n`));
    const peerRows = await runPeer({ peer, backends, duration: o.duration, rounds: o.rounds, only: o.only, onRow });
    machine.loadAfter = loadavg().map((x) => Math.round(x * 100) / 100);
    const setup =
      `this tree (${machine.commit}) against ${peer} (bench/peer), each on its own fresh database, our server with ` +
      `node ${SERVER_FLAGS.join(' ')}, the peer with V8 defaults; ${o.rounds} interleaved rounds of ${o.duration} s ` +
      "per row, alternating which goes first; 32 connections; CPU µs/req: ours (the peer's)";
    const md = `${machineLine(machine)}\n${setup}\n\n${toMarkdown(peerRows, `× ${peer}`)}\n`;
    process.stdout.write(md);
    save(o.save, machine, setup, argv, peerRows, md);
    return;
  }
  const rows = await runBench({
    duration: o.duration,
    quick: o.quick,
    backends,
    only: o.only,
    large: o.large,
    profileDir,
    serverFlags,
    rounds: o.rounds,
    onRow,
  });
  machine.loadAfter = loadavg().map((x) => Math.round(x * 100) / 100);
  const redis = backends.includes('postgres') ? (process.env.TEST_REDIS_URL ? ' (+ Redis rate limits)' : '') : '';
  const setup =
    `SQLite WAL+synchronous=FULL${backends.includes('postgres') ? `, PostgreSQL${redis}` : ''}; ` +
    `server: node ${serverFlags.join(' ') || '(V8 defaults)'}; 32 connections unless noted; ` +
    `${o.rounds} interleaved rounds of ${o.duration} s (baseline, candidate) per row`;
  const md = `${machineLine(machine)}\n${setup}\n\n${toMarkdown(rows)}\n`;
  process.stdout.write(md);
  if (profileDir) {
    // A server's profile covers its scenario's first measured row (its warm-up and rounds).
    const cpu = new Map<string, number>();
    for (const r of rows) {
      const folder = profileFolder(r.backend as Backend, r.scenario);
      if (r.cpuUs && !cpu.has(folder)) cpu.set(folder, r.cpuUs);
    }
    process.stdout.write(`\n${summariseProfiles(profileDir, 20, cpu)}\n`);
    process.stdout.write(`profiles kept in ${profileDir}\n`);
  }
  save(o.save, machine, setup, argv, rows, md);
}

/** Writes the run's rows and table to bench/results/<time>.{json,md}. */
function save(on: boolean, machine: Machine, setup: string, argv: string[], rows: Row[], md: string): void {
  if (!on) return;
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
  writeFileSync(
    join(ROOT, 'bench/results', `${stamp}.json`),
    JSON.stringify({ machine, setup, argv: argv.slice(2), rows }, null, 2),
  );
  writeFileSync(join(ROOT, 'bench/results', `${stamp}.md`), md);
  process.stderr.write(`[bench] saved bench/results/${stamp}.{json,md}\n`);
}
