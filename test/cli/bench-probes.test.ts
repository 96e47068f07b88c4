// Backends: sqlite — each probe runs on its own SQLite file (the PostgreSQL side of a probe is the same code with another URL)
// Tier: full — six small measurements that load the whole app, seed data and, for `console`, start a `wsvc serve` child
// The probes of `npm run bench -- --probe <name>` (docs/performance.md#probes) run at a tiny size, so none of them
// rots unnoticed between the times someone needs it. No timed assertion: each finishes and prints its last line. They
// run in this process (as `bin/bench.js --probe` runs them), their output captured. Not run here: `inject-against`
// (it checks out and compiles a commit, as the --against case of bench-smoke does) and `driver` (PostgreSQL, and
// postgres.js, which is not a dependency).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ROOT } from '../../bench/harness.js';
import { PROBES, probeList, runProbe } from '../../bench/probes/index.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs a probe with the backend variables blanked; resolves what it printed. */
async function probe(name: string, args: string[]): Promise<string> {
  let out = '';
  const capture = (chunk: unknown) => {
    out += String(chunk);
    return true;
  };
  vi.spyOn(process.stdout, 'write').mockImplementation(capture);
  vi.spyOn(console, 'log').mockImplementation((...xs: unknown[]) => capture(`${xs.join(' ')}\n`));
  vi.stubEnv('TEST_DATABASE_URL', '');
  vi.stubEnv('TEST_REDIS_URL', '');
  try {
    await runProbe(name, args);
  } finally {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
  }
  return out;
}

describe('bench probes', () => {
  it('lists every probe of bench/probes/, and only those', async () => {
    const files = readdirSync(join(ROOT, 'bench/probes'))
      .filter((f) => f.endsWith('.ts') && f !== 'index.ts' && f !== 'in-process.ts')
      .map((f) => f.replace(/\.ts$/, ''))
      .sort();
    expect(PROBES.map((p) => p.name).sort()).toEqual(files);
    for (const p of PROBES) expect(probeList()).toContain(p.name);
    await expect(runProbe('no-such-probe', [])).rejects.toThrow('no probe named "no-such-probe"');
  });

  it.each([
    ['steps', ['--n', '200'], 'difference (the API on top of bare Fastify)'],
    ['event-write', ['--n', '32', '--rounds', '1'], 'the two reads alone'],
    ['read-trips', ['--n', '32', '--rounds', '1', '--loops', '5'], "the repository's list alone"],
    ['audit-floor', ['--rounds', '1', '--batches', '2'], 'the entry:'],
    ['log-redaction', ['--n', '100'], 'pino, with redaction'],
    ['console', ['--n', '2', '--resources', '60', '--deliveries', '200'], 'worst p99'],
  ])(
    '--probe %s runs at a tiny size',
    async (name, args, last) => {
      expect(await probe(name, args)).toContain(last);
    },
    120_000,
  );
});
