// Backends: sqlite — reads files only, no storage.
// Tier: quick — a scan of the docs and of the strings in the source; a decision or issue number a reader cannot look up fails `npm test`.
// What a user reads names the rule itself or links to the page that states it, never a design decision's
// number (`D28`) or a tracker's issue (`issue 22`): the README, docs/**/*.md, ARCHITECTURE.md, the client
// package's README, and every string literal of src/ and console/src (error messages, OpenAPI
// descriptions, console text). Code comments are for maintainers and are not scanned.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
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

function sourceStrings(): string[] {
  const paths = [...files('src', /\.ts$/), ...files('console/src', /\.tsx?$/)].filter(
    (p) => !/\.test(-d)?\.tsx?$/.test(p),
  );
  return paths.flatMap((p) => {
    const source = ts.createSourceFile(p, readFileSync(join(ROOT, p), 'utf8'), ts.ScriptTarget.Latest, true);
    const found: string[] = [];
    const visit = (node: ts.Node) => {
      if (
        ts.isStringLiteral(node) ||
        ts.isNoSubstitutionTemplateLiteral(node) ||
        ts.isTemplateHead(node) ||
        ts.isTemplateMiddle(node) ||
        ts.isTemplateTail(node)
      ) {
        found.push(...offending(p, node.text, source.getLineAndCharacterOfPosition(node.getStart()).line + 1));
      } else if (ts.isJsxText(node)) {
        found.push(...offending(p, node.text, source.getLineAndCharacterOfPosition(node.getStart()).line + 1));
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    return found;
  });
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

  it('strings in src/ and console/src (errors, OpenAPI text, the console) name the rule, not its number', () => {
    expect(sourceStrings()).toEqual([]);
  });
});
