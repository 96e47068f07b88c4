// Backends: sqlite — reads files only, no storage.
// Tier: quick — a scan of the docs and the sources; a decision or issue number a reader cannot look up fails `npm test`.
// The repository states a rule, or links the page that states it, never a design decision's number (`D28`) or a
// tracker's issue (`issue 22`), which a reader of the repository cannot look up: the README, docs/**/*.md,
// ARCHITECTURE.md, the client package, and all the text (comments and strings) of src/, console/src, scripts/,
// bench/ (its results too), bin/ and test/.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const DECISION = /\bD\d{1,2}\b/;
const ISSUE = /\bissues? #?\d+|\(#\d+\)/i;

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : files(p, ext);
    return ext.test(e.name) ? [p] : [];
  });
}

/** `file:line: text` for each line or string that names a decision or an issue. */
function offending(path: string, text: string, line = 1): string[] {
  return text
    .split('\n')
    .flatMap((l, i) => (DECISION.test(l) || ISSUE.test(l) ? [`${path}:${line + i}: ${l.trim().slice(0, 120)}`] : []));
}

function docs(): string[] {
  const paths = ['README.md', 'ARCHITECTURE.md', 'packages/client/README.md', ...files('docs', /\.md$/)];
  return paths.flatMap((p) => offending(p, readFileSync(join(ROOT, p), 'utf8')));
}

/** Every line of the code and the bench's results, comments included. */
function code(): string[] {
  const self = 'test/architecture/no-decision-numbers.test.ts'; // its examples below name numbers on purpose
  const paths = [
    ...['src', 'console/src', 'scripts', 'bin', 'test', 'packages/client/src'].flatMap((d) =>
      files(d, /\.(ts|tsx|js|mjs|cjs|json|css|html)$/),
    ),
    ...files('bench', /\.(ts|js|mjs|json|md)$/).filter((p) => !p.startsWith('bench/peer/node_modules')),
  ].filter((p) => p !== self);
  return paths.flatMap((p) => offending(p, readFileSync(join(ROOT, p), 'utf8')));
}

describe('no decision or issue numbers where users read', () => {
  it('the scan finds one when there is one', () => {
    expect(offending('x.md', 'On by default (D28).')).toEqual(['x.md:1: On by default (D28).']);
    expect(offending('x.md', 'see issue 22, item 3')).toHaveLength(1);
    expect(offending('x.md', 'fixed in (#31)')).toHaveLength(1);
    expect(offending('x.md', 'D-Bus, 2D charts, the docs/api.md#errors anchor, HTTP/2, color #000')).toEqual([]);
  });

  it('README, ARCHITECTURE.md and docs/ name the rule, not its number', () => {
    expect(docs()).toEqual([]);
  });

  it('src/, console/src, scripts/, bench/, bin/ and test/ (comments, strings, results) name the rule, not its number', () => {
    expect(code()).toEqual([]);
  });
});
