// Backends: sqlite — reads files only, no storage.
// Tier: quick — a scan of the docs and the sources; a pointer to a heading that does not exist fails `npm test`.
// Every pointer into the repository's Markdown names a heading that exists: links and mentions like
// `docs/api.md#errors`, `[paging](api.md#paging)` and `(#targets)`, and mentions like `docs/performance.md, "Queries
// built once"` (the heading's text, quoted), in the README, ARCHITECTURE.md, docs/, the client package, and the
// comments and strings of src/, console/src, scripts/, bench/, bin/ and test/. Anchors are GitHub's: the heading's
// text in lower case, punctuation dropped, spaces to hyphens, `-1`, `-2`… for repeats.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/** The text GitHub renders for a heading: links as their text, code and emphasis marks dropped. */
const headingText = (h: string) => h.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').trim();

/** GitHub's anchor of a heading. */
const slug = (heading: string) =>
  headingText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

const anchorCache = new Map<string, Set<string>>();
/** The anchors of a Markdown file (headings outside code blocks, with GitHub's suffixes for repeats). */
function anchorsOf(path: string): Set<string> {
  let found = anchorCache.get(path);
  if (found) return found;
  const text = readFileSync(join(ROOT, path), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  found = new Set<string>();
  const seen = new Map<string, number>();
  for (const m of text.matchAll(/^#{1,6} (.+?)\s*#*$/gm)) {
    const base = slug(m[1] as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    found.add(n ? `${base}-${n}` : base);
  }
  anchorCache.set(path, found);
  return found;
}

function filesUnder(dir: string, ext: RegExp): string[] {
  if (!existsSync(join(ROOT, dir))) return [];
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory()) return ['node_modules', 'dist', 'results'].includes(e.name) ? [] : filesUnder(p, ext);
    return ext.test(e.name) ? [p] : [];
  });
}

/** The files whose pointers are checked. */
function scannedFiles(): string[] {
  const code = /\.(ts|tsx|js|mjs)$/;
  return [
    'README.md',
    'ARCHITECTURE.md',
    'packages/client/README.md',
    ...filesUnder('docs', /\.md$/),
    ...['src', 'console/src', 'scripts', 'bench', 'bin', 'test', 'packages/client/src'].flatMap((d) =>
      filesUnder(d, code),
    ),
  ];
}

/** The Markdown file a pointer names, seen from `from`; undefined when there is none. */
function resolveTarget(from: string, target: string): string | undefined {
  const candidates = from.endsWith('.md')
    ? [normalize(join(dirname(from), target)), normalize(target)]
    : [normalize(target), normalize(join('docs', target))];
  return candidates.find((c) => !c.startsWith('..') && existsSync(join(ROOT, c)));
}

/** `path: pointer (what is wrong)` for each pointer of `text` (the contents of `path`) that names no heading. */
function brokenPointers(path: string, text: string): string[] {
  const broken: string[] = [];
  // A comment's line breaks, comment marks and indentation joined, so a quoted heading may span lines.
  const flat = text.replace(/\n[ \t]*(?:\/\/+|\*(?!\/)|#(?!#))?[ \t]*/g, ' ');
  const check = (target: string, anchor: string, shown: string) => {
    const file = target ? resolveTarget(path, target) : path;
    if (!file) broken.push(`${path}: ${shown} (no such file)`);
    else if (!anchorsOf(file).has(anchor)) broken.push(`${path}: ${shown} (no such heading in ${file})`);
  };
  // file.md#anchor, and in Markdown (#anchor).
  for (const m of flat.matchAll(/(?<![\w:/.-])((?:\.\.\/|\.\/)?[\w/.-]*\.md)#([\w-]+)/g)) {
    check(m[1] as string, m[2] as string, m[0]);
  }
  if (path.endsWith('.md')) {
    for (const m of flat.matchAll(/\]\(#([\w-]+)\)/g)) check('', m[1] as string, m[0]);
  }
  // file.md, "Heading" (also as a link's target: [x](file.md), "Heading"), and file.md "Heading".
  for (const m of flat.matchAll(/(?<![\w:/.-])((?:\.\.\/|\.\/)?[\w/.-]*\.md)\)?,? "([^"]{2,160})"/g)) {
    check(m[1] as string, slug(m[2] as string), m[0]);
  }
  return broken;
}

describe('pointers into the docs', () => {
  it('the scan finds a broken one when there is one', () => {
    expect(brokenPointers('src/x.ts', '// docs/api.md#errors and docs/api.md#no-such-heading')).toEqual([
      'src/x.ts: docs/api.md#no-such-heading (no such heading in docs/api.md)',
    ]);
    expect(brokenPointers('src/x.ts', '// (docs/performance.md, "Queries\n  // built once")')).toEqual([]);
    expect(brokenPointers('src/x.ts', '// (docs/performance.md, "Earlier changes" 4)')).toHaveLength(1);
    expect(brokenPointers('src/x.ts', '// docs/nowhere.md#x')).toEqual(['src/x.ts: docs/nowhere.md#x (no such file)']);
    expect(brokenPointers('docs/using.md', 'See [errors](api.md#errors) and [here](#nothing).')).toEqual([
      'docs/using.md: ](#nothing) (no such heading in docs/using.md)',
    ]);
    expect(
      brokenPointers('src/x.ts', "// https://github.com/o/r/blob/main/README.md#usage, readFile('a.md', 'x')"),
    ).toEqual([]);
  });

  it('name headings that exist', () => {
    const self = 'test/docs/doc-pointers.test.ts'; // its examples above are broken on purpose
    const files = scannedFiles().filter((p) => p !== self);
    const broken = files.flatMap((p) => brokenPointers(p, readFileSync(join(ROOT, p), 'utf8')));
    expect(broken).toEqual([]);
  });

  it('from src/ and console/src into docs/performance.md, name the section (the page is long)', () => {
    const vague = scannedFiles()
      .filter((p) => p.startsWith('src/') || p.startsWith('console/src/'))
      .flatMap((p) =>
        [...readFileSync(join(ROOT, p), 'utf8').matchAll(/docs\/performance\.md(?![#\w]|,\s*(?:\/\/|\*)?\s*")/g)].map(
          (m) => `${p}: ${m[0]} at offset ${m.index}`,
        ),
      );
    expect(vague).toEqual([]);
  });
});
