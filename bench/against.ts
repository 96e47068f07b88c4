// Benchmark (docs/performance.md#against-another-commit): this tree against another commit, in the same run.
// `npm run bench -- --against <git ref>` checks the ref out into a temporary git worktree (sharing this tree's
// node_modules when both lock files are the same, `npm ci` there otherwise), compiles it, and then, per backend
// and scenario, starts one server of each tree, each on its own fresh database that its own code migrated and
// seeded (`wsvc workspaces create`, then the API), so a commit that adds a migration is measured with it.
// The two are loaded in interleaved rounds, alternating which goes first; a row's ratio is this tree's req/s over
// the reference's in the same round, its median and spread over the rounds.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import pg from 'pg';
import { type Backend, benchServerEnv, type Child, createViaApi, freePort, load, ROOT, startChild } from './harness.js';
import { median, type Round, type Row, summarise } from './report.js';

/** A scenario of the A/B run: the requests to replay, made from what `prepare` created through the API. */
interface AbScenario {
  name: string;
  requests(port: number, headers: Record<string, string>): Promise<autocannon.Request[]>;
}

const post = {
  method: 'POST' as const,
  path: '/v1/resources',
  body: JSON.stringify({ name: 'bench', type: 'standard', metadata: { a: 'b' } }),
};

export const AB_SCENARIOS: AbScenario[] = [
  {
    name: 'GET /v1/resources/{id}',
    async requests(port, headers) {
      const [id] = await createViaApi(port, headers, 1);
      return [{ method: 'GET', path: `/v1/resources/${id}` }];
    },
  },
  { name: 'POST /v1/resources', requests: async () => [post] },
  {
    name: 'PUT /v1/resources/{id}',
    async requests(port, headers) {
      const [id] = await createViaApi(port, headers, 1);
      return [{ method: 'PUT', path: `/v1/resources/${id}`, body: JSON.stringify({ name: 'renamed' }) }];
    },
  },
  {
    name: 'GET /v1/resources?limit=20',
    async requests(port, headers) {
      await createViaApi(port, headers, 40);
      return [{ method: 'GET', path: '/v1/resources?limit=20' }];
    },
  },
];

export interface Reference {
  root: string;
  /** The ref as given and its short commit. */
  label: string;
  remove(): void;
}

const git = (args: string[], cwd = ROOT) => execFileSync('git', args, { cwd, stdio: 'pipe' }).toString().trim();

/** Checks `ref` out beside this tree and compiles its server (dist/). */
export function prepareReference(ref: string, log: (line: string) => void): Reference {
  const sha = git(['rev-parse', '--verify', `${ref}^{commit}`]);
  const root = mkdtempSync(join(tmpdir(), 'wsvc-bench-ref-'));
  git(['worktree', 'add', '--detach', '--force', root, sha]);
  const remove = () => {
    try {
      git(['worktree', 'remove', '--force', root]);
    } catch {
      rmSync(root, { recursive: true, force: true });
    }
  };
  try {
    const lock = (dir: string) => readFileSync(join(dir, 'package-lock.json'), 'utf8');
    if (existsSync(join(root, 'package-lock.json')) && lock(root) === lock(ROOT)) {
      symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
    } else {
      // Its own dependencies; no `prepare` (it would build the console too), only the native module built.
      log(`${ref}'s package-lock.json differs from this tree's: npm ci there (a few minutes)`);
      execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: root, stdio: 'inherit' });
      execFileSync('npm', ['rebuild', 'better-sqlite3'], { cwd: root, stdio: 'inherit' });
    }
    log(`compiling ${ref} (${sha.slice(0, 7)}) in ${root}`);
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], {
      cwd: root,
      stdio: 'inherit',
    });
  } catch (err) {
    remove();
    throw err;
  }
  return { root, label: `${ref} (${sha.slice(0, 7)})`, remove };
}

export interface Side {
  server: Child;
  headers: Record<string, string>;
  drop(): Promise<void>;
}

/**
 * A fresh database migrated and seeded by the tree at `root` (its own CLI), and that tree's server on it.
 * `plansFile`: plan limits on (the default in production) with these plans, the workspace moved to `scale` (a
 * paying plan: metered, no hard cap) by the tree's own `wsvc billing set-plan`; a tree without billing runs as it is.
 */
export async function startSide(
  root: string,
  backend: Backend,
  dir: string,
  tag: string,
  plansFile?: string,
): Promise<Side> {
  const suffix = `${tag}_${Math.random().toString(36).slice(2, 8)}`;
  const pgUrl = process.env.TEST_DATABASE_URL ?? '';
  let url = `sqlite:${join(dir, `${suffix}.db`)}`;
  let drop = async () => {};
  if (backend === 'postgres') {
    const schema = `bench_ab_${suffix}`;
    const admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
    await admin.end();
    url = `${pgUrl}${pgUrl.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}`;
    drop = async () => {
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    };
  }
  const limits = plansFile ? { PLAN_LIMITS: 'on', PLANS_FILE: plansFile } : {};
  const env = { ...process.env, ...limits, DATABASE_URL: url, LOG_LEVEL: 'warn', REDIS_URL: '' };
  const out = execFileSync(
    process.execPath,
    [
      join(root, 'bin/wsvc.js'),
      '--json',
      'workspaces',
      'create',
      '--name',
      'bench',
      '--admin-email',
      'bench@example.com',
    ],
    { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
  ).toString();
  const created = JSON.parse(out) as { workspace: { id: string }; keys: { live: { key: string } } };
  const key = created.keys.live.key;
  if (plansFile && existsSync(join(root, 'dist/cli/billing.commands.js'))) {
    const setPlan = ['billing', 'set-plan', '--workspace', created.workspace.id, '--plan', 'scale'];
    execFileSync(process.execPath, [join(root, 'bin/wsvc.js'), ...setPlan], { cwd: root, env, stdio: 'ignore' });
  }
  const port = await freePort();
  const serverEnv = benchServerEnv(url, backend, port, limits);
  const server = await startChild([join(root, 'bin/wsvc.js'), 'serve', '--api-only'], serverEnv, null, port, [
    '--max-semi-space-size=4',
  ]);
  return { server, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, drop };
}

/** Every A/B scenario on every backend: this tree (candidate) against `ref`, in interleaved rounds. */
export async function runAgainst(opts: {
  ref: Reference;
  backends: Backend[];
  duration: number;
  rounds: number;
  only?: string;
  /** Plan limits on with this plans file, the workspace on `scale`, on both sides (startSide). */
  plansFile?: string;
  onRow?(row: Row): void;
}): Promise<Row[]> {
  const rows: Row[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-bench-ab-'));
  try {
    for (const backend of opts.backends) {
      for (const sc of AB_SCENARIOS) {
        if (opts.only && !sc.name.includes(opts.only)) continue;
        const ref = await startSide(opts.ref.root, backend, dir, 'ref', opts.plansFile);
        const cand = await startSide(ROOT, backend, dir, 'cand', opts.plansFile);
        try {
          const refReq = await sc.requests(ref.server.port, ref.headers);
          const candReq = await sc.requests(cand.server.port, cand.headers);
          // Warm-up: JIT and caches of both servers.
          await load(ref.server, 1, refReq, ref.headers);
          await load(cand.server, 1, candReq, cand.headers);
          const done: Round[] = [];
          for (let i = 0; i < opts.rounds; i++) {
            const refFirst = i % 2 === 0;
            const a = refFirst ? await load(ref.server, opts.duration, refReq, ref.headers) : undefined;
            const c = await load(cand.server, opts.duration, candReq, cand.headers);
            const b = a ?? (await load(ref.server, opts.duration, refReq, ref.headers));
            done.push({ base: b, cand: c, ratio: b.rps ? c.rps / b.rps : 0 });
          }
          const row: Row = {
            ...summarise(backend, sc.name, done, cand.server.peakRssMb()),
            note: `ratio: to ${opts.ref.label}, ${Math.round(median(done.map((r) => r.base.rps)))} req/s there`,
          };
          rows.push(row);
          opts.onRow?.(row);
        } finally {
          await ref.server.stop();
          await cand.server.stop();
          await ref.drop();
          await cand.drop();
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}
