import { readdirSync, readFileSync } from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';

// One suite, both backends (docs/operations.md): the `sqlite` project always runs, with the backend
// variables blanked so it never touches PostgreSQL or Redis; the `postgres` project runs the
// same integration tests again when TEST_DATABASE_URL is set (and Redis when TEST_REDIS_URL is).
// PLAN_LIMITS=off in both: every server and CLI a test spawns inherits it (plan limits are on by
// default, and suites make more webhooks, resources and requests than the free plan allows); the
// billing tests turn them on themselves.
const pg = process.env.TEST_DATABASE_URL;
// WSVC_TEST_BROWSER=off leaves out the files that drive Chromium (those that call launchChromium or
// start the console server with its browser, test/helpers/console-server.ts):
// .ci/run's second runtime leg sets it (the console is the same bundle in the same browser on any
// Node version; the first leg runs them). Said at the start of the run (test/backends-line.ts).
const testDir = new URL('./test/', import.meta.url);
const browserTests =
  process.env.WSVC_TEST_BROWSER === 'off'
    ? (readdirSync(testDir, { recursive: true }) as string[])
        .filter(
          (f) =>
            f.endsWith('.test.ts') &&
            /launchChromium\(|helpers\/console-server\.js/.test(readFileSync(new URL(f, testDir), 'utf8')),
        )
        .map((f) => `test/${f}`)
    : [];
const exclude = [...configDefaults.exclude, ...browserTests];

export default defineConfig({
  test: {
    pool: 'forks',
    // Child-process tests run bin/wsvc.js, i.e. dist/: compile it first. Then say which backends
    // run and which setting turns on the skipped ones.
    globalSetup: ['test/global-setup.ts', 'test/backends-line.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // .ci/run asks for a JSON report too, to print a plain "N passed, N failed" closing line, and
    // for test/ci-reporter.ts's list of the failed and flaky tests by name.
    reporters: process.env.VITEST_JSON_REPORT ? ['default', 'json', './test/ci-reporter.ts'] : ['default'],
    // .ci/run sets WSVC_TEST_RETRY=1: on a loaded 2-core machine a browser or process test can lose
    // a race against its own timeout once in a few thousand. A test that fails twice fails the run;
    // one that passes on its retry is listed by name as flaky at the end of the run (never hidden).
    // `npm test` on its own does not retry.
    retry: Number(process.env.WSVC_TEST_RETRY ?? 0),
    outputFile: process.env.VITEST_JSON_REPORT ? { json: process.env.VITEST_JSON_REPORT } : undefined,
    projects: [
      {
        extends: true,
        test: {
          name: 'sqlite',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude,
          env: { TEST_DATABASE_URL: '', TEST_REDIS_URL: '', WSVC_TEST_PROJECT: 'sqlite', PLAN_LIMITS: 'off' },
        },
      },
      ...(pg
        ? [
            {
              extends: true,
              test: {
                name: 'postgres',
                include: ['test/**/*.test.ts'],
                exclude,
                env: {
                  TEST_DATABASE_URL: pg,
                  TEST_REDIS_URL: process.env.TEST_REDIS_URL ?? '',
                  WSVC_TEST_PROJECT: 'postgres',
                  PLAN_LIMITS: 'off',
                },
              },
            },
          ]
        : []),
    ],
  },
});
