import { availableParallelism, loadavg } from 'node:os';
import { relative } from 'node:path';
import type { Reporter, TestSpecification, Vitest } from 'vitest/node';
import { type Selection, selection, type TestFile } from './tiers.js';

const SET_PG = 'TEST_DATABASE_URL=postgres://user@host:5432/db TEST_REDIS_URL=redis://host:6379';

/** A duration as docs/testing.md writes it: `42 s`, `2 min 51 s`. */
export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/**
 * The closing line of `npm test` (docs/testing.md): its wall time from `startedMs` (the script's
 * start, WSVC_TEST_STARTED_MS, before lint) or else from the tests' start, split into the checks and
 * the tests, and the machine it ran on, so times from different machines can be compared.
 */
export function wallTimeLine(t: {
  startedMs?: number;
  testsStartedMs: number;
  endMs: number;
  cores: number;
  load: number;
}): string {
  const machine = `${t.cores} cores, load average ${t.load.toFixed(1)}`;
  const tests = duration(t.endMs - t.testsStartedMs);
  if (t.startedMs === undefined) return `Took ${tests} wall time for the tests (${machine}).`;
  const checks = duration(t.testsStartedMs - t.startedMs);
  return `Took ${duration(t.endMs - t.startedMs)} wall time: lint, typecheck and dependency rules ${checks}, tests ${tests} (${machine}).`;
}

/**
 * The lines that frame a run (docs/testing.md): at the start, how many files run on which
 * backend, and each backend or file left out with the setting that brings it in; at the end, after
 * the summary, what this run left out and the command that runs everything, then how long it took.
 */
export default class RunLines implements Reporter {
  private vitest!: Vitest;
  private sel!: Selection;
  private byPath = new Map<string, TestFile>();
  private testsStartedMs = Date.now();

  onInit(vitest: Vitest): void {
    this.testsStartedMs = Date.now();
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
    const chromium = count.get('chromium');
    const pg = count.get('postgres');
    const pgOnly = sel.files.filter((f) => f.backends === 'postgres');
    const lines = [`Backends (docs/testing.md#backends): ${specifications.length} file runs`];
    if (lite) {
      lines.push(
        `  sqlite    ${lite.all} file${lite.all === 1 ? '' : 's'} on SQLite: ${lite.both} storage-dependent (Backends: both), ${lite.sqlite} storage-independent, run only here (Backends: sqlite)`,
      );
    }
    if (chromium) {
      lines.push(`  chromium  ${chromium.all} file${chromium.all === 1 ? '' : 's'} on SQLite that drive Chromium`);
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
    if (out.length > 0) {
      const env = [noPg && !sel.pg ? SET_PG : '', sel.browserOff ? 'WSVC_TEST_BROWSER=' : ''].filter(Boolean);
      this.log(
        `Left out: ${out.join(' and ')}. Run them with \`${[...env, 'npm run test:all'].join(' ')}\` (docs/testing.md).`,
      );
    }
    // `npm test` sets WSVC_TEST_STARTED_MS before its lint: the time a contributor waits.
    const started = Number(process.env.WSVC_TEST_STARTED_MS);
    this.log(
      `${wallTimeLine({
        startedMs: Number.isFinite(started) && started > 0 ? started : undefined,
        testsStartedMs: this.testsStartedMs,
        endMs: Date.now(),
        cores: availableParallelism(),
        load: loadavg()[0] ?? 0,
      })}\n`,
    );
  }
}
