import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Where each test file runs, read from the two lines of its header comment (docs/testing.md):
 *   // Backends: both — <why>       touches storage: the sqlite and the postgres project
 *   // Backends: sqlite — <why>     does not depend on storage: runs once, in the sqlite project
 *   // Backends: postgres — <why>   PostgreSQL/Redis-specific: the postgres project only
 *   // Tier: quick                  in `npm test` (seconds per file)
 *   // Tier: full — <why>           only in `npm run test:all` and CI
 * vitest.config.ts builds its projects from this; test/run-lines.ts says what ran where.
 */
export const BACKENDS = ['both', 'sqlite', 'postgres'] as const;
export const TIERS = ['quick', 'full'] as const;
export type Backends = (typeof BACKENDS)[number];
export type Tier = (typeof TIERS)[number];

export interface TestFile {
  /** Relative to the repository, with forward slashes: `test/keys/keys.test.ts`. */
  path: string;
  backends: Backends;
  tier: Tier;
  /** Drives Chromium (calls launchChromium or starts the console server with its browser, itself or through the screens' fixture). */
  browser: boolean;
}

const TEST_FILE = /\.test\.ts$/;
const BACKENDS_LINE = /^\/\/ Backends: (\S+)(?:\s+[—–-]\s+(.*))?$/gm;
const TIER_LINE = /^\/\/ Tier: (\S+)(?:\s+[—–-]\s+(.*))?$/gm;
const BROWSER = /launchChromium\(|workerChromium\(|helpers\/console-server\.js|\/screens-fixture\.js/;

export const CONVENTION = [
  'Every test file says where it runs in its header comment, with two lines (docs/testing.md):',
  '  // Backends: both — <why>      (touches storage: runs on SQLite and on PostgreSQL+Redis)',
  '  // Backends: sqlite — <why>    (does not depend on storage: runs once)',
  '  // Backends: postgres — <why>  (PostgreSQL/Redis-specific)',
  '  // Tier: quick                 (in `npm test`: keep the file to seconds)',
  '  // Tier: full — <why>          (only in `npm run test:all` and CI: Chromium, process kills, soaks)',
].join('\n');

function walk(dir: string, root: string, out: string[]): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) walk(full, root, out);
    else if (TEST_FILE.test(entry.name)) out.push(relative(root, full).split('\\').join('/'));
  }
}

/** What is wrong with one file's header lines, or its place. */
export function readHeader(path: string, text: string): { file?: TestFile; problem?: string } {
  const backends = [...text.matchAll(BACKENDS_LINE)];
  const tiers = [...text.matchAll(TIER_LINE)];
  const problems: string[] = [];
  const b = backends[0];
  const t = tiers[0];
  if (backends.length !== 1) problems.push(`${backends.length} "// Backends:" lines (one wanted)`);
  else if (!BACKENDS.includes(b?.[1] as Backends))
    problems.push(`Backends "${b?.[1]}" is not one of ${BACKENDS.join(', ')}`);
  else if (!b?.[2]?.trim()) problems.push('the Backends line gives no reason after "—"');
  if (tiers.length !== 1) problems.push(`${tiers.length} "// Tier:" lines (one wanted)`);
  else if (!TIERS.includes(t?.[1] as Tier)) problems.push(`Tier "${t?.[1]}" is not one of ${TIERS.join(', ')}`);
  else if (t?.[1] === 'full' && !t?.[2]?.trim()) problems.push('"Tier: full" gives no reason after "—"');
  if (problems.length > 0) return { problem: `${path}: ${problems.join('; ')}` };
  return {
    file: { path, backends: b?.[1] as Backends, tier: t?.[1] as Tier, browser: BROWSER.test(text) },
  };
}

/** Every test file under src/ and test/ with its header; throws naming each file that lacks one. */
export function testFiles(root: string): TestFile[] {
  const paths: string[] = [];
  for (const dir of ['src', 'test']) walk(join(root, dir), root, paths);
  const files: TestFile[] = [];
  const problems: string[] = [];
  for (const path of paths.sort()) {
    const { file, problem } = readHeader(path, readFileSync(join(root, path), 'utf8'));
    if (file) files.push(file);
    if (problem) problems.push(problem);
  }
  if (problems.length > 0) {
    throw new Error(
      `Test files without their two header lines:\n${problems.map((p) => `  ${p}`).join('\n')}\n\n${CONVENTION}\n`,
    );
  }
  return files;
}

/** What one run takes, from its settings: the files of each project and why others are left out. */
export interface Selection {
  files: TestFile[];
  /** WSVC_TEST_TIER=quick: `npm test`. */
  quick: boolean;
  /** TEST_DATABASE_URL and TEST_REDIS_URL are set. */
  pg: boolean;
  redis: boolean;
  /** WSVC_TEST_BROWSER=off. */
  browserOff: boolean;
  /** The SQLite files that do not drive Chromium: the `sqlite` project. */
  sqlite: string[];
  /** The SQLite files that drive Chromium: the `chromium` project, started first (test/sequencer.ts). */
  chromium: string[];
  postgres: string[];
}

export function selection(root: string, env: NodeJS.ProcessEnv): Selection {
  const tier = env.WSVC_TEST_TIER ?? '';
  if (!['', 'quick', 'full'].includes(tier)) {
    throw new Error(`WSVC_TEST_TIER=${tier}: use quick (\`npm test\`), or leave it unset for every tier`);
  }
  const files = testFiles(root);
  const quick = tier === 'quick';
  const pg = Boolean(env.TEST_DATABASE_URL);
  const browserOff = env.WSVC_TEST_BROWSER === 'off';
  const kept = files.filter((f) => (!quick || f.tier === 'quick') && !(browserOff && f.browser));
  return {
    files,
    quick,
    pg,
    redis: Boolean(env.TEST_REDIS_URL),
    browserOff,
    sqlite: kept.filter((f) => f.backends !== 'postgres' && !f.browser).map((f) => f.path),
    chromium: kept.filter((f) => f.backends !== 'postgres' && f.browser).map((f) => f.path),
    postgres: pg && !quick ? kept.filter((f) => f.backends !== 'sqlite').map((f) => f.path) : [],
  };
}
