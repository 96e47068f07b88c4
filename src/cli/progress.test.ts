import { describe, expect, it } from 'vitest';
import { createProgress, formatDuration, progressLine } from './progress.js';

// Backends: sqlite — pure formatting of the `db copy` progress line
// Tier: quick

describe('db copy progress', () => {
  it('a line has rows done of total, percentage, rate and time left', () => {
    expect(progressLine(25_000, 100_000, 5_000)).toBe('25,000 / 100,000 rows (25%), 5,000 rows/s, 15s left');
    expect(progressLine(0, 100_000, 0)).toBe('0 / 100,000 rows (0%), 0 rows/s, ? left');
    expect(progressLine(0, 0, 10)).toBe('0 / 0 rows (100%), 0 rows/s, ? left');
  });

  it('durations are short', () => {
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(59_400)).toBe('59s');
    expect(formatDuration(65_000)).toBe('1m 05s');
    expect(formatDuration(3_720_000)).toBe('1h 02m');
  });

  it('on a terminal: redrawn in place at most every interval, the last one always, then cleared', () => {
    const written: string[] = [];
    let t = 1_000;
    const p = createProgress({ isTTY: true, write: (s: string) => written.push(s) }, () => t, 200);
    p.update(0, 1000);
    t += 50;
    p.update(100, 1000); // within the interval: skipped
    t += 200;
    p.update(500, 1000);
    t += 10;
    p.update(1000, 1000); // the end is always drawn
    p.finish();
    p.finish();
    expect(written).toEqual([
      '\r\x1b[2K0 / 1,000 rows (0%), 0 rows/s, ? left',
      '\r\x1b[2K500 / 1,000 rows (50%), 2,000 rows/s, 0s left',
      '\r\x1b[2K1,000 / 1,000 rows (100%), 3,846 rows/s, 0s left',
      '\r\x1b[2K',
    ]);
  });

  it('not a terminal (pipe, file, --json): nothing at all', () => {
    const written: string[] = [];
    const p = createProgress({ isTTY: false, write: (s: string) => written.push(s) });
    p.update(0, 10);
    p.update(10, 10);
    p.finish();
    expect(written).toEqual([]);
  });
});
