import { relative } from 'node:path';
import type { Reporter, TestSpecification, Vitest } from 'vitest/node';
import { type Selection, selection, type TestFile } from './tiers.js';

const SET_PG = 'TEST_DATABASE_URL=postgres://user@host:5432/db TEST_REDIS_URL=redis://host:6379';

/**
 * The two lines that frame a run (docs/testing.md): at the start, how many files run on which
 * backend, and each backend or file left out with the setting that brings it in; at the end, after
 * the summary, what this run left out and the command that runs everything.
 */
export default class RunLines implements Reporter {
  private vitest!: Vitest;
  private sel!: Selection;
  private byPath = new Map<string, TestFile>();

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
    this.sel = selection(vitest.config.root, process.env);
    for (const f of this.sel.files) this.byPath.set(f.path, f);
  }

  private log(text: string): void {
    this.vitest.logger.log(text);
  }

  private projects(): Set<string> {
    return new Set(this.vitest.projects.map((p) => p.name));
  }

  onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
    const count = new Map<string, { both: number; sqlite: number; postgres: number; all: number }>();
    for (const s of specifications) {
      const file = this.byPath.get(relative(this.vitest.config.root, s.moduleId).split('\\').join('/'));
      const name = s.project.name;
      const c = count.get(name) ?? { both: 0, sqlite: 0, postgres: 0, all: 0 };
      c.all++;
      if (file) c[file.backends]++;
      count.set(name, c);
    }
    const sel = this.sel;
    const lite = count.get('sqlite');
    const pg = count.get('postgres');
    const pgOnly = sel.files.filter((f) => f.backends === 'postgres');
    const lines = [`Backends (docs/testing.md#backends): ${specifications.length} file runs`];
    if (lite) {
      lines.push(
        `  sqlite    ${lite.all} file${lite.all === 1 ? '' : 's'} on SQLite: ${lite.both} storage-dependent (Backends: both), ${lite.sqlite} storage-independent, run only here (Backends: sqlite)`,
      );
    }
    if (pg) {
      lines.push(
        `  postgres  ${pg.all} file${pg.all === 1 ? '' : 's'} on PostgreSQL${sel.redis ? ' and Redis' : ''}: ${pg.both} storage-dependent (Backends: both), ${pg.postgres} PostgreSQL/Redis-only (Backends: postgres)`,
      );
      if (!sel.redis) {
        lines.push(
          '  Redis     SKIPPED (TEST_REDIS_URL unset): the shared rate-limit and free-cap tests skip. Set TEST_REDIS_URL=redis://host:6379 to run them.',
        );
      }
    } else {
      const why = sel.quick
        ? 'not in `npm test`, which runs on SQLite (`npm run test:all` runs it)'
        : sel.pg
          ? 'SKIPPED (not selected by --project)'
          : `SKIPPED (TEST_DATABASE_URL unset; set ${SET_PG} to run it)`;
      lines.push(
        `  postgres  ${why}: the storage-dependent files again, and ${pgOnly.length} PostgreSQL/Redis-only files: ${pgOnly.map((f) => f.path).join(', ')}`,
      );
    }
    if (sel.browserOff) {
      const n = sel.files.filter((f) => f.browser && (!sel.quick || f.tier === 'quick')).length;
      lines.push(`  Chromium  ${n} files SKIPPED (WSVC_TEST_BROWSER=off). Unset it to run them.`);
    }
    this.log(`\n${lines.join('\n')}\n`);
  }

  onTestRunEnd(): void {
    const sel = this.sel;
    const out: string[] = [];
    if (sel.quick) {
      const full = sel.files.filter((f) => f.tier === 'full').length;
      out.push(`${full} "Tier: full" files (Chromium journeys, process kills, soaks)`);
    }
    if (sel.browserOff && !sel.quick) out.push(`${sel.files.filter((f) => f.browser).length} Chromium files`);
    const noPg = !this.projects().has('postgres');
    if (noPg) {
      const n = sel.files.filter((f) => f.backends !== 'sqlite' && (!sel.browserOff || !f.browser)).length;
      out.push(`the PostgreSQL and Redis run (${n} files)`);
    }
    if (out.length === 0) return;
    const env = [noPg && !sel.pg ? SET_PG : '', sel.browserOff ? 'WSVC_TEST_BROWSER=' : ''].filter(Boolean);
    this.log(
      `Left out: ${out.join(' and ')}. Run them with \`${[...env, 'npm run test:all'].join(' ')}\` (docs/testing.md).\n`,
    );
  }
}
