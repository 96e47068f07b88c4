// Backends: sqlite — the benchmark harness runs its own SQLite server
// Tier: full — a benchmark run of several scenarios
// Benchmark (docs/performance.md#method): a short smoke run of the harness so it cannot rot.
// No timed assertions: only that every scenario produced a row, measured rows ran their interleaved rounds
// against the baseline, and no request failed. The peer case (--peer) runs only with WSVC_TEST_PEER=1: it installs
// Directus in bench/peer on first use (npm ci, minutes), which the suite must not do.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { prepareReference, runAgainst } from '../../bench/against.js';
import { ROOT } from '../../bench/harness.js';
import { runBench } from '../../bench/main.js';
import { preparePeer, runPeer } from '../../bench/peer.js';

const inGitRepo = spawnSync('git', ['rev-parse', '--git-dir'], { cwd: ROOT }).status === 0;

describe('bench harness (smoke)', () => {
  it('runs the quick scenarios in interleaved rounds with zero non-2xx', async () => {
    const rows = await runBench({ duration: 1, quick: true, rounds: 3 });
    expect(rows.map((r) => r.scenario.replace(/:.*/, ''))).toEqual([
      'baseline (bare Fastify)',
      'GET /v1/resources/{id}',
      'GET /v1/resources?limit=20',
      'POST /v1/resources',
      'webhook fan-out',
    ]);
    for (const r of rows) {
      expect(r.rps).toBeGreaterThan(0);
      expect(r.non2xx).toBe(0);
    }
    for (const r of rows.slice(1, 4)) {
      expect(r.rounds).toHaveLength(3);
      for (const round of r.rounds ?? []) expect(round.base.rps).toBeGreaterThan(0);
      expect(r.ratio).toBeGreaterThan(0);
      expect(r.ratioMin).toBeLessThanOrEqual(r.ratio as number);
      expect(r.ratioMax).toBeGreaterThanOrEqual(r.ratio as number);
      expect(r.cpuUs).toBeGreaterThan(0);
    }
  }, 120_000);

  // .ci/with-node runs the suite in a copy of the tree without .git (CI's second runtime): no history to check out.
  it.runIf(inGitRepo)(
    'measures this tree against a commit (--against) with a fresh database for each side',
    async () => {
      const ref = prepareReference('HEAD', () => {});
      try {
        const rows = await runAgainst({ ref, backends: ['sqlite'], duration: 1, rounds: 2, only: 'POST' });
        expect(rows.map((r) => r.scenario)).toEqual(['POST /v1/resources']);
        const [row] = rows;
        expect(row?.note).toMatch(/^ratio: to HEAD \([0-9a-f]{7}\)/);
        expect(row?.rounds).toHaveLength(2);
        for (const round of row?.rounds ?? []) {
          expect(round.base.rps).toBeGreaterThan(0);
          expect(round.cand.rps).toBeGreaterThan(0);
          expect(round.base.non2xx + round.cand.non2xx).toBe(0);
        }
      } finally {
        ref.remove();
      }
      // The reference's worktree is gone again.
      expect(existsSync(ref.root)).toBe(false);
    },
    180_000,
  );

  it.runIf(process.env.WSVC_TEST_PEER === '1')(
    'measures this tree against the peer (--peer), the same three operations on both, no request failed',
    async () => {
      const peer = preparePeer(() => {});
      expect(peer).toMatch(/^Directus \d+\.\d+\.\d+$/);
      const rows = await runPeer({ peer, backends: ['sqlite'], duration: 1, rounds: 2 });
      expect(rows.map((r) => r.scenario)).toEqual([
        'GET /v1/resources/{id}',
        'GET /v1/resources?limit=20',
        'POST /v1/resources',
      ]);
      for (const row of rows) {
        expect(row.note).toMatch(/^ratio: to Directus /);
        expect(row.rounds).toHaveLength(2);
        for (const round of row.rounds ?? []) {
          expect(round.base.rps).toBeGreaterThan(0);
          expect(round.cand.rps).toBeGreaterThan(0);
          expect(round.base.non2xx + round.cand.non2xx).toBe(0);
        }
      }
    },
    900_000,
  );
});
