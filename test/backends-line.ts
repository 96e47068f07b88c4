/**
 * Says plainly, once per run, which backends the suite covers and which setting turns on the
 * ones it skips (docs/operations.md#tests-on-both-backends).
 */
export default function backendsLine(): void {
  // Projects inherit the global setup; say it once.
  const g = globalThis as { wsvcBackendsSaid?: boolean };
  if (g.wsvcBackendsSaid) return;
  g.wsvcBackendsSaid = true;
  const pg = Boolean(process.env.TEST_DATABASE_URL);
  const redis = Boolean(process.env.TEST_REDIS_URL);
  const lines = ['Backends: SQLite (always).'];
  lines.push(
    pg
      ? 'PostgreSQL: on (TEST_DATABASE_URL); the `postgres` project runs the integration tests again.'
      : 'PostgreSQL tests: SKIPPED. Set TEST_DATABASE_URL=postgres://user@host:5432/db to run them.',
  );
  lines.push(
    redis
      ? 'Redis: on (TEST_REDIS_URL); rate-limit counters and the Redis outage tests use it.'
      : 'Redis tests: SKIPPED. Set TEST_REDIS_URL=redis://host:6379 (with TEST_DATABASE_URL) to run them.',
  );
  if (process.env.WSVC_TEST_BROWSER === 'off') {
    lines.push('Browser tests (Chromium): SKIPPED (WSVC_TEST_BROWSER=off). Unset it to run them.');
  }
  process.stdout.write(`\n${lines.join('\n')}\n\n`);
}
