// The probes of `npm run bench -- --probe <name>` (docs/performance.md#probes): measurements of one part of the
// service, in-process or against one server, that the scenarios cannot isolate. Each probe is a module of this folder
// that exports `run(args)`, `args` being what follows its name on the command line; `--probe list` prints them.

export interface Probe {
  name: string;
  /** What it measures, in one line. */
  summary: string;
  /** Where it runs: SQLite, or PostgreSQL (and Redis) when TEST_DATABASE_URL (TEST_REDIS_URL) is set. */
  backends: string;
  load(): Promise<{ run(args: string[]): Promise<void> }>;
}

export const PROBES: Probe[] = [
  {
    name: 'steps',
    summary: 'each step of a GET by id alone (request id, key digest and cache, the read), a list, creates, inject',
    backends: 'SQLite',
    load: () => import('./steps.js'),
  },
  {
    name: 'event-write',
    summary: 'a POST through inject: CPU, and on PostgreSQL its round trips and statements by kind',
    backends: 'SQLite; PostgreSQL with TEST_DATABASE_URL',
    load: () => import('./event-write.js'),
  },
  {
    name: 'read-trips',
    summary: 'what a GET by id and the lists send to PostgreSQL and Redis; the list in one statement or two',
    backends: 'SQLite; PostgreSQL and Redis with TEST_DATABASE_URL and TEST_REDIS_URL',
    load: () => import('./read-trips.js'),
  },
  {
    name: 'audit-floor',
    summary: "an audit entry's cost to SQLite itself (better-sqlite3 statements, no JavaScript of ours)",
    backends: 'SQLite',
    load: () => import('./audit-floor.js'),
  },
  {
    name: 'inject-against',
    summary: "this tree's GET by id path against a git ref's, in one process through inject (no sockets)",
    backends: 'SQLite',
    load: () => import('./inject-against.js'),
  },
  {
    name: 'driver',
    summary: 'the PostgreSQL client alone: pg against postgres.js on the hot reads (npm install --no-save postgres)',
    backends: 'PostgreSQL (TEST_DATABASE_URL)',
    load: () => import('./driver.js'),
  },
  {
    name: 'log-redaction',
    summary: "the log redaction's CPU per line, alone and inside a pino log line",
    backends: 'none',
    load: () => import('./log-redaction.js'),
  },
  {
    name: 'console',
    summary: "the console's page API calls behind 10,000 resources and 100,000 deliveries: p50, p95, p99 per call",
    backends: 'SQLite; PostgreSQL with --pg <url>',
    load: () => import('./console.js'),
  },
];

/** The lines `--probe list` prints. */
export function probeList(): string {
  const width = Math.max(...PROBES.map((p) => p.name.length));
  return PROBES.map((p) => `${p.name.padEnd(width)}  ${p.summary} (${p.backends})`).join('\n');
}

/** Runs the probe named `name` with `args`; throws on an unknown name, listing the known ones. */
export async function runProbe(name: string | undefined, args: string[]): Promise<void> {
  const probe = PROBES.find((p) => p.name === name);
  if (!probe) {
    throw new Error(`${name ? `no probe named "${name}"` : '--probe needs a name'}; the probes:\n${probeList()}`);
  }
  await (await probe.load()).run(args);
}
