// Benchmark (docs/performance.md#method): a short smoke run of the benchmark harness so it cannot rot. No timed assertions: only that
// every scenario produced a row and no request failed.
import { describe, expect, it } from 'vitest';
import { runBench } from '../bench/main.js';

describe('bench harness (smoke)', () => {
  it('runs the quick scenarios with zero non-2xx', async () => {
    const rows = await runBench({ duration: 1, quick: true });
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
  }, 60_000);
});
