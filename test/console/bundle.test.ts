import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { consoleBuilt } from '../helpers/browser.js';

// Backends: sqlite — the built console's files
// Tier: quick
// The built console (npm run build:console, run by `prepare`): what the first page load costs and
// where it may fetch from (docs/console.md: nothing leaves the machine).
const DIST = join('dist', 'console');

describe('the built console', () => {
  it('is built', () => {
    expect(consoleBuilt()).toBe(true);
  });

  it('loads at most 150 kB of gzipped JavaScript before the first page (pages are separate chunks)', () => {
    const html = readFileSync(join(DIST, 'index.html'), 'utf8');
    const initial = [...html.matchAll(/<(?:script|link)[^>]+(?:src|href)="\/console\/(assets\/[^"]+\.js)"/g)].map(
      (m) => m[1] as string,
    );
    expect(initial.length).toBeGreaterThan(0);
    const gz = initial.reduce((n, f) => n + gzipSync(readFileSync(join(DIST, f))).length, 0);
    expect(gz).toBeLessThanOrEqual(150 * 1024);
    const chunks = readdirSync(join(DIST, 'assets')).filter((f) => f.endsWith('.js'));
    expect(chunks.length).toBeGreaterThan(initial.length + 5);
    // A production build (React's development build would be half again as large).
    expect(chunks.filter((f) => f.includes('jsx-dev-runtime'))).toEqual([]);
    // The overview's chart library is a chunk of its own, not part of the first load.
    const chart = chunks.find((f) => f.startsWith('deliveries-chart-'));
    expect(chart).toBeDefined();
    expect(initial).not.toContain(`assets/${chart}`);
    for (const f of initial) expect(readFileSync(join(DIST, f), 'utf8')).not.toContain('u-legend');
  });

  it('references nothing outside the machine: no CDN, no web font, no inline script', () => {
    const html = readFileSync(join(DIST, 'index.html'), 'utf8');
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    for (const f of readdirSync(join(DIST, 'assets'))) {
      const text = readFileSync(join(DIST, 'assets', f), 'utf8');
      expect(text, f).not.toMatch(/@import|url\(\s*['"]?(https?:)?\/\/|fonts\.googleapis|@font-face/);
    }
  });
});
