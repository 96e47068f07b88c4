import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import LongestFirst from './test/sequencer.js';
import { selection } from './test/tiers.js';

// Where each test file runs is written in its header (`// Backends: …` and `// Tier: …`,
// docs/testing.md); test/tiers.ts reads them, and a file without both lines stops the run here,
// named, with the convention. The projects:
// - `sqlite`: every `Backends: both` and `Backends: sqlite` file, with the backend variables blanked
//   so it never touches PostgreSQL or Redis, but the files that drive Chromium;
// - `chromium`: those, on SQLite as well, in one process per worker (below);
// - `postgres`: the `both` and `postgres` files again, when TEST_DATABASE_URL is set (and Redis
//   when TEST_REDIS_URL is), each file in its own schema.
// WSVC_TEST_TIER=quick (`npm test`) keeps the `Tier: quick` files and the sqlite project only;
// WSVC_TEST_BROWSER=off (.ci/run's second runtime) leaves out the files that drive Chromium.
// test/run-lines.ts says at the start how many files run where, and at the end what was left out.
// PLAN_LIMITS=off in both: every server and CLI a test spawns inherits it (plan limits are on by
// default, and suites make more webhooks, resources and requests than the free plan allows); the
// billing tests turn them on themselves.
// PASSWORD_HASH_COST=10 in both: console passwords hashed with scrypt at N=2^10 instead of OWASP's 2^17 (about
// a second of one core and 128 MiB each); the same code hashes and checks, each hash naming its own N.
// src/modules/console-auth/passwords.test.ts checks the production default.
const TEST_PASSWORD_COST = '10';
// The key sealing stored secrets on PostgreSQL in tests (32 bytes of 0x2a, base64); SQLite's is the key file.
const TEST_SECRETS_KEY = Buffer.alloc(32, 42).toString('base64');
const { sqlite, chromium, postgres } = selection(fileURLToPath(new URL('.', import.meta.url)), process.env);
// The SQLite projects' settings: the backend variables blanked, so they never touch PostgreSQL or Redis.
const SQLITE_ENV = {
  TEST_DATABASE_URL: '',
  TEST_REDIS_URL: '',
  WSVC_TEST_PROJECT: 'sqlite',
  PLAN_LIMITS: 'off',
  PASSWORD_HASH_COST: TEST_PASSWORD_COST,
};

export default defineConfig({
  test: {
    pool: 'forks',
    // A worker runs its files one after the other in one process, not a process per file: the packages
    // of node_modules (Fastify, Kysely, pg, playwright-core, …) are loaded once per worker, not once a
    // file. test/fresh-modules.ts evaluates src/ and test/ afresh before each file, so no file sees
    // another's module state; each file still opens its own database (a SQLite file, a PostgreSQL
    // schema). Vitest keeps a worker's process while the next file in the queue is of the same
    // project, and test/sequencer.ts queues the projects one after the other (docs/testing.md#shared-set-up).
    isolate: false,
    setupFiles: ['test/fresh-modules.ts'],
    // One fork more than cores (Vitest's default is one fewer: a single fork on 2 cores): most files
    // wait on fsync, child processes, sockets and Chromium. On the 2-core machine of docs/testing.md,
    // 17 files of the quick tier took 815 s with one fork, 456 s with three, 402 s with four (load
    // average 9-14, other suites running beside). WSVC_TEST_WORKERS=n to choose.
    maxWorkers: Number(process.env.WSVC_TEST_WORKERS) || availableParallelism() + 1,
    // Child-process tests run bin/wsvc.js, i.e. dist/: compile it first (and the console).
    globalSetup: ['test/global-setup.ts', 'test/chromium-broker.ts'],
    // Longest expected first, both projects mixed (test/sequencer.ts): a run does not end on one long file.
    sequence: { sequencer: LongestFirst },
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll waits for what a page or a worker shows by itself: 1 s (Vitest's default) is short
    // of what a loaded 2-core machine may take to fetch and render; a passing poll returns at once.
    expect: { poll: { timeout: 10_000 } },
    // After the default reporter: the backends line once its run header is out, the "left out" line
    // after its summary.
    // .ci/run asks for a JSON report too, to print a plain "N passed, N failed" closing line, and
    // for test/ci-reporter.ts's list of the failed and flaky tests by name.
    reporters: [
      'default',
      './test/run-lines.ts',
      ...(process.env.VITEST_JSON_REPORT ? ['json', './test/ci-reporter.ts'] : []),
    ],
    // .ci/run sets WSVC_TEST_RETRY=1: on a loaded 2-core machine a browser or process test can lose
    // a race against its own timeout once in a few thousand. A test that fails twice fails the run;
    // one that passes on its retry is listed by name as flaky at the end of the run (never hidden).
    // `npm test` on its own does not retry.
    retry: Number(process.env.WSVC_TEST_RETRY ?? 0),
    outputFile: process.env.VITEST_JSON_REPORT ? { json: process.env.VITEST_JSON_REPORT } : undefined,
    projects: [
      {
        extends: true,
        test: { name: 'sqlite', include: sqlite, env: SQLITE_ENV },
      },
      // The files that drive Chromium, on SQLite: test/sequencer.ts starts them first.
      ...(chromium.length > 0
        ? [
            {
              extends: true,
              test: {
                name: 'chromium',
                include: chromium,
                env: SQLITE_ENV,
              },
            },
          ]
        : []),
      ...(postgres.length > 0
        ? [
            {
              extends: true,
              test: {
                name: 'postgres',
                include: postgres,
                env: {
                  TEST_DATABASE_URL: process.env.TEST_DATABASE_URL ?? '',
                  TEST_REDIS_URL: process.env.TEST_REDIS_URL ?? '',
                  WSVC_TEST_PROJECT: 'postgres',
                  PLAN_LIMITS: 'off',
                  // PostgreSQL needs SECRETS_KEY (docs/settings.md#secrets_key): every process of a test, the same.
                  SECRETS_KEY: TEST_SECRETS_KEY,
                  PASSWORD_HASH_COST: TEST_PASSWORD_COST,
                },
              },
            },
          ]
        : []),
    ],
  },
});
