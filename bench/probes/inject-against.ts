// Probe `inject-against` (docs/performance.md#probes): GET /v1/resources/{id} on SQLite through Fastify's inject, this
// tree's app and a reference commit's app in ONE process, alternating every `--n` requests: no sockets, no Node HTTP
// parser, no load generator, so what differs is the two trees' own request path (hooks, authentication, rate limit,
// metering, the read, the JSON), measured under the same conditions (a loaded machine slows both sides alike). Each
// tree runs its own `startServer` (API only) on a fresh SQLite file that its own CLI created, with plan limits on and
// the workspace on a paying plan (scale) where the tree has billing, as `npm run bench -- --against REF --plan-limits`
// does. Run: `npm run bench -- --probe inject-against <git ref> [--n 2000] [--rounds 30]` (the first 3 turns per side
// are warm-up).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { prepareReference } from '../against.js';
import { ROOT } from '../harness.js';
import { benchPlansFile } from '../scenarios.js';

const WARM_UP = 3;

interface Side {
  label: string;
  app: FastifyInstance;
  stop(): Promise<void>;
  request: InjectOptions;
  cpuUs: number;
  n: number;
}

async function side(dir: string, plansFile: string, root: string, label: string, i: number): Promise<Side> {
  const url = `sqlite:${join(dir, `side${i}.db`)}`;
  const env = {
    ...process.env,
    PLAN_LIMITS: 'on',
    PLANS_FILE: plansFile,
    DATABASE_URL: url,
    LOG_LEVEL: 'warn',
    REDIS_URL: '',
    PORT: '0',
    RATE_LIMIT_LIVE: '100000000',
  };
  const cli = (args: string[]) =>
    execFileSync(process.execPath, [join(root, 'bin/wsvc.js'), ...args], { cwd: root, env }).toString();
  const created = JSON.parse(cli(['--json', 'workspaces', 'create', '--name', 'b', '--admin-email', 'b@example.com']));
  if (existsSync(join(root, 'dist/cli/billing.commands.js')))
    cli(['billing', 'set-plan', '--workspace', created.workspace.id, '--plan', 'scale']);
  // Each tree's own modules (through tsx), so each runs its own code.
  const { loadConfig } = await import(join(root, 'src/config.ts'));
  const { startServer } = await import(join(root, 'src/server.ts'));
  const running = (await startServer(loadConfig(env), { apiOnly: true })) as {
    app: FastifyInstance;
    stop(): Promise<void>;
  };
  const authorization = `Bearer ${created.keys.live.key}`;
  const made = await running.app.inject({
    method: 'POST',
    url: '/v1/resources',
    headers: { authorization, 'content-type': 'application/json' },
    payload: { name: 'bench', type: 'standard', metadata: { a: 'b' } },
  });
  const request: InjectOptions = {
    method: 'GET',
    url: `/v1/resources/${JSON.parse(made.body).data.id}`,
    headers: { authorization },
  };
  const check = await running.app.inject(request);
  if (check.statusCode !== 200) throw new Error(`${label}: GET answered ${check.statusCode}: ${check.body}`);
  return { label, app: running.app, stop: running.stop, request, cpuUs: 0, n: 0 };
}

/** Runs the probe with its command-line options (`args`, after the probe's name: the reference first). */
export async function run(args: string[]): Promise<void> {
  const cmd = new Command('inject-against')
    .argument('<ref>', 'the git ref to compare with (checked out and compiled as --against does)')
    .option('--n <n>', 'requests per turn', Number, 2000)
    .option('--rounds <n>', 'turns per side', Number, 30)
    .parse(args, { from: 'user' });
  const { n: N, rounds: ROUNDS } = cmd.opts<{ n: number; rounds: number }>();
  const ref = cmd.args[0] as string;
  const reference = prepareReference(ref, (line) => process.stdout.write(`[inject-against] ${line}\n`));
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-inject-against-'));
  const plansFile = benchPlansFile();
  try {
    const sides = [
      await side(dir, plansFile, ROOT, 'this tree', 0),
      await side(dir, plansFile, reference.root, reference.label, 1),
    ];
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of round % 2 ? [...sides].reverse() : sides) {
        const before = process.cpuUsage();
        for (let i = 0; i < N; i++) await s.app.inject(s.request);
        const used = process.cpuUsage(before);
        if (round < WARM_UP) continue;
        s.cpuUs += used.user + used.system;
        s.n += N;
      }
    }
    const [ours, theirs] = sides as [Side, Side];
    const per = (s: Side) => s.cpuUs / s.n;
    for (const s of sides)
      process.stdout.write(`${s.label.padEnd(24)} ${per(s).toFixed(1).padStart(7)} µs CPU per GET\n`);
    process.stdout.write(`this tree / ${reference.label}: ${(per(ours) / per(theirs)).toFixed(3)} (CPU per GET)\n`);
    for (const s of sides) await s.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
    reference.remove();
  }
}
