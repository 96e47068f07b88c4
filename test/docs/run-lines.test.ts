import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { duration, wallTimeLine } from '../run-lines.js';

// Backends: sqlite — the closing lines of a test run, from numbers
// Tier: quick
// The closing line of `npm test` (test/run-lines.ts) gives its own wall time, lint included, and the
// machine's cores and load, as docs/testing.md shows it; `npm test` gives the reporter its start time.
const ROOT = join(import.meta.dirname, '..', '..');
const MIN = 60_000;

describe('the closing line of npm test', () => {
  it('writes durations as docs/testing.md does', () => {
    expect([
      duration(0),
      duration(42_400),
      duration(59_600),
      duration(2 * MIN + 51_000),
      duration(7 * MIN + 18_000),
    ]).toEqual(['0 s', '42 s', '1 min 0 s', '2 min 51 s', '7 min 18 s']);
  });

  it("gives npm test's wall time from its start, split into the checks and the tests, and the machine", () => {
    const line = wallTimeLine({ startedMs: 0, testsStartedMs: 24_000, endMs: 2 * MIN + 51_000, cores: 2, load: 3.44 });
    expect(line).toBe(
      'Took 2 min 51 s wall time: lint, typecheck and dependency rules 24 s, tests 2 min 27 s (2 cores, load average 3.4).',
    );
    // Without npm test's start (vitest run on its own): the tests' time.
    expect(wallTimeLine({ testsStartedMs: 0, endMs: 38_000, cores: 2, load: 1 })).toBe(
      'Took 38 s wall time for the tests (2 cores, load average 1.0).',
    );
  });

  it('is the line docs/testing.md shows, and npm test passes its start time', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'testing.md'), 'utf8');
    const shown = doc.split('\n').find((l) => l.startsWith('Took <m> min'));
    expect(shown).toBeDefined();
    const pattern = new RegExp(
      `^${(shown as string)
        .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
        .replaceAll('<m>', '\\d+')
        .replaceAll('<s>', '\\d+')
        .replaceAll('<n>', '\\d+')
        .replaceAll('<x>', '\\d+\\.\\d')}$`,
    );
    expect(wallTimeLine({ startedMs: 0, testsStartedMs: 30_000, endMs: 5 * MIN, cores: 4, load: 0.5 })).toMatch(
      pattern,
    );
    // npm test's first step, run by sh as npm runs it, gives the steps after it the start time.
    const script: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.test;
    const [first, second] = script.split(' && ');
    expect(second).toBe('npm run lint');
    const before = Date.now();
    const started = execFileSync('sh', ['-c', `${first} && node -p process.env.WSVC_TEST_STARTED_MS`], {
      encoding: 'utf8',
    });
    expect(Number(started)).toBeGreaterThanOrEqual(before);
  });
});
