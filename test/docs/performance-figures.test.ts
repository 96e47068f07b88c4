// Backends: sqlite — reads docs/performance.md and bench/results, no storage.
// Tier: quick — a file scan; figures that drift from the results, or a journal entry in the reference, fail `npm test`.
// docs/performance.md is a reference: its figures and targets are what scripts/perf-figures.ts writes from the latest
// reference run and peer run of each CPU model in bench/results, which keeps only those; its prose says what is, with
// no session dates, commit hashes or "this round" (git keeps the history).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  applyFigures,
  generateFigures,
  latest,
  PERFORMANCE_FILE,
  readResults,
  runKind,
  superseded,
} from '../../scripts/perf-figures.js';

const text = readFileSync(PERFORMANCE_FILE, 'utf8');
/** The page without its generated sections (they name results files, whose names are times). */
const prose = text.replace(/<!-- generated:(\w+) -->[\s\S]*?<!-- \/generated:\1 -->/g, '');

describe('docs/performance.md', () => {
  it('has the figures, targets and peer runs that bench/results gives (regenerate with `npm run docs:perf`)', () => {
    const sections = generateFigures();
    const stale = Object.keys(sections).filter((name) => {
      const re = new RegExp(`<!-- generated:${name} -->[\\s\\S]*?<!-- /generated:${name} -->`);
      return text.match(re)?.[0] !== applyFigures(text, sections).match(re)?.[0];
    });
    expect(stale, `run \`npm run docs:perf\`: stale sections ${stale.join(', ')}`).toEqual([]);
  });

  it('bench/results keeps only the latest reference and peer run of each CPU model (`npm run docs:perf` prunes)', () => {
    expect(superseded()).toEqual([]);
    const files = readResults();
    expect(latest(files, 'reference').size).toBeGreaterThan(0);
    for (const f of files) expect(runKind(f), f.name).not.toBe('partial');
  });

  it('says what is: no commit hashes, session dates or rounds', () => {
    const lines = prose.split('\n');
    const found = lines.filter(
      (l) =>
        /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b/.test(l) ||
        /\b20\d\d-\d\d-\d\d\b(?!T)/.test(l.replace(/`[^`]*`/g, '')) ||
        /\b(this|previous|next|last) (round|session)\b|\b(today|tonight|yesterday)\b/i.test(l),
    );
    expect(found).toEqual([]);
  });
});
