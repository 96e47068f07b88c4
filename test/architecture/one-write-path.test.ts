// Backends: sqlite — reads source files only, no storage.
// Tier: quick
// One write path: every write transaction outside src/db/ is opened by the write runner
// (src/platform/unit-of-work.ts), which checks the actor at commit. A direct
// `writeTransaction(` anywhere else would skip that check.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../../src');
const RUNNER = 'platform/unit-of-work.ts';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** `file:line` of each `writeTransaction(` call outside src/db/ and the runner. */
function directWrites(): string[] {
  return sourceFiles(SRC).flatMap((path) => {
    const rel = relative(SRC, path).split('\\').join('/');
    if (rel.startsWith('db/') || rel === RUNNER) return [];
    return readFileSync(path, 'utf8')
      .split('\n')
      .flatMap((line, i) => (line.includes('writeTransaction(') ? [`src/${rel}:${i + 1}`] : []));
  });
}

describe('one write path', () => {
  it('no writeTransaction( outside src/db/ and the write runner', () => {
    expect(directWrites()).toEqual([]);
  });

  it("finds the runner's own call, so the search itself works", () => {
    expect(readFileSync(join(SRC, RUNNER), 'utf8')).toContain('writeTransaction(');
    expect(sourceFiles(SRC).length).toBeGreaterThan(100);
  });
});
