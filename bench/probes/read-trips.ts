// Probe `read-trips` (docs/performance.md#probes): what a read sends to the servers, in-process through Fastify's inject
// (bench/probes/in-process.ts): pg statements and ioredis commands per request, by kind, for a GET by id and the lists
// of 20 (first page, offset, cursor, an old cursor without its offset, a filter), and this process's CPU µs per request
// (`process.cpuUsage`, 32 requests at once, median of the rounds, the kinds interleaved). Then the repository's list
// alone, sequential, in its two shapes: the total and the page in one statement (what PostgreSQL runs) and as separate
// statements (what SQLite runs), chosen by flipping the dialect's `roundTrips`, CPU µs per call, the shapes interleaved.
// SQLite (CPU only); PostgreSQL and Redis with TEST_DATABASE_URL and TEST_REDIS_URL.
// Run: `npm run bench -- --probe read-trips [--n 2048] [--rounds 5] [--loops <n>]`.

import { Command } from 'commander';
import type { Storage } from '../../src/db/database.js';
import type { Env } from '../../src/db/types.js';
import { systemActor } from '../../src/kernel/principal.js';
import type { PageRequest } from '../../src/lib/paging.js';
import { resourcesRepository } from '../../src/modules/resources/resources.repository.js';
import type { ListResourcesFilter } from '../../src/modules/resources/resources.schemas.js';
import { countRoundTrips, openInProcess, pgStatements, redisCommands, sumOf } from './in-process.js';

const RESOURCES = 100;

/** Runs the probe with its command-line options (`args`, after the probe's name). */
export async function run(args: string[]): Promise<void> {
  const pgUrl = process.env.TEST_DATABASE_URL;
  const redisUrl = pgUrl ? process.env.TEST_REDIS_URL : undefined;
  const opts = new Command('read-trips')
    .option('--n <n>', 'requests per round and kind (a multiple of 32)', Number, 2048)
    .option('--rounds <n>', 'rounds, the kinds interleaved', Number, 5)
    .option('--loops <n>', 'calls of the repository per shape and round', Number, pgUrl ? 1000 : 10000)
    .parse(args, { from: 'user' })
    .opts<{ n: number; rounds: number; loops: number }>();
  const N = opts.n;
  const ROUNDS = opts.rounds;
  const LOOPS = opts.loops;
  countRoundTrips();
  const { app, services, storage, close } = await openInProcess({ name: 'read-trips', pgUrl, redisUrl });
  try {
    const ws = await services.workspaces.create(services.uow.as(systemActor('cli')), {
      name: 'reads',
      adminEmail: 'reads@example.com',
    });
    const headers = { authorization: `Bearer ${ws.keys.live.key}`, 'content-type': 'application/json' };
    const ids: string[] = [];
    for (let i = 0; i < RESOURCES; i++) {
      const type = i % 3 === 0 ? 'premium' : 'standard';
      const payload = JSON.stringify({ name: `r${i}`, type, metadata: { a: 'b' } });
      const res = await app.inject({ method: 'POST', url: '/v1/resources', headers, payload });
      ids.push((JSON.parse(res.body) as { data: { id: string } }).data.id);
    }
    const get = async (url: string) => {
      const res = await app.inject({ method: 'GET', url, headers });
      if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}: ${res.body}`);
      return JSON.parse(res.body) as { meta?: { next_cursor: string | null } };
    };
    const cursor = (await get('/v1/resources?limit=20')).meta?.next_cursor as string;
    const { after } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { after: string };
    const oldCursor = Buffer.from(JSON.stringify({ v: 1, after })).toString('base64url');
    const kinds: [string, string][] = [
      ['GET by id', `/v1/resources/${ids[50]}`],
      ['list of 20', '/v1/resources?limit=20'],
      ['list, offset 40', '/v1/resources?limit=20&offset=40'],
      ['list, cursor', `/v1/resources?limit=20&cursor=${cursor}`],
      ['list, old cursor', `/v1/resources?limit=20&cursor=${oldCursor}`],
      ['list, ?type=', '/v1/resources?limit=20&type=premium'],
    ];
    for (const [, url] of kinds) for (let i = 0; i < N / 4; i++) await get(url); // warm-up
    const cpu = new Map<string, number[]>();
    const trips = new Map<string, { pg: Map<string, number>; redis: Map<string, number> }>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const [kind, url] of round % 2 === 0 ? kinds : [...kinds].reverse()) {
        pgStatements.clear();
        redisCommands.clear();
        const c0 = process.cpuUsage();
        for (let i = 0; i < N; i += 32) await Promise.all(Array.from({ length: 32 }, () => get(url)));
        const c = process.cpuUsage(c0);
        cpu.set(kind, [...(cpu.get(kind) ?? []), (c.user + c.system) / N]);
        trips.set(kind, { pg: new Map(pgStatements), redis: new Map(redisCommands) });
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    const backend = `${pgUrl ? 'postgres' : 'sqlite'}${redisUrl ? ' + redis' : ''}`;
    process.stdout.write(`${backend}: ${ROUNDS} rounds of ${N} requests per kind, 32 at once\n`);
    const per = (m: Map<string, number>) => [...m].map(([k, n]) => `${(n / N).toFixed(2)} ${k}`).join(', ') || '–';
    for (const [kind] of kinds) {
      const xs = cpu.get(kind) ?? [];
      const t = trips.get(kind);
      process.stdout.write(
        `  ${kind.padEnd(17)} CPU µs/request median ${median(xs).toFixed(0)} (${xs.map((x) => x.toFixed(0)).join(', ')})\n`,
      );
      if (pgUrl && t) {
        process.stdout.write(`    pg statements per request ${(sumOf(t.pg) / N).toFixed(2)}: ${per(t.pg)}\n`);
        process.stdout.write(`    redis commands per request ${(sumOf(t.redis) / N).toFixed(2)}: ${per(t.redis)}\n`);
      }
    }
    await shapes(
      storage,
      ws.workspace.id,
      JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')).after,
      ROUNDS,
      LOOPS,
    );
  } finally {
    await close();
  }
}

/** The repository's list in both shapes (one statement, separate statements): same pages, then CPU per call. */
async function shapes(storage: Storage, workspaceId: string, after: string, ROUNDS: number, LOOPS: number) {
  const tenant = { workspaceId, env: 'live' as Env };
  const dialect = storage.dialect as { roundTrips?: boolean };
  const own = dialect.roundTrips;
  const cases: [string, ListResourcesFilter, PageRequest][] = [
    ['first', {}, { limit: 20, offset: 0, afterId: null }],
    ['offset 40', {}, { limit: 20, offset: 40, afterId: null }],
    ['cursor', {}, { limit: 20, offset: 0, afterId: after, afterOffset: 20 }],
    ['old cursor', {}, { limit: 20, offset: 0, afterId: after, afterOffset: null }],
    ['?type=', { type: 'premium' }, { limit: 20, offset: 0, afterId: null }],
    ['empty', { type: 'custom' }, { limit: 20, offset: 0, afterId: null }],
  ];
  const run = (one: boolean, f: ListResourcesFilter, p: PageRequest) => {
    dialect.roundTrips = one;
    return resourcesRepository.list(storage.db, tenant, f, p);
  };
  const strip = (page: Awaited<ReturnType<typeof run>>) =>
    JSON.stringify({ ...page, items: page.items.map((r) => ({ ...r, total: undefined, before: undefined })) });
  for (const [name, f, p] of cases) {
    if (strip(await run(true, f, p)) !== strip(await run(false, f, p))) throw new Error(`${name}: the shapes differ`);
  }
  const cpu = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, f, p] of cases) {
      for (const one of round % 2 === 0 ? [true, false] : [false, true]) {
        for (let i = 0; i < LOOPS / 10; i++) await run(one, f, p);
        const c0 = process.cpuUsage();
        for (let i = 0; i < LOOPS; i++) await run(one, f, p);
        const c = process.cpuUsage(c0);
        const k = `${name}|${one}`;
        cpu.set(k, [...(cpu.get(k) ?? []), (c.user + c.system) / LOOPS]);
      }
    }
  }
  dialect.roundTrips = own;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const f = (xs: number[]) => `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)})`;
  process.stdout.write(
    `  the repository's list alone, CPU µs per call, median (min–max) of ${ROUNDS} rounds of ${LOOPS}:\n`,
  );
  for (const [name] of cases) {
    const one = cpu.get(`${name}|true`) ?? [];
    const two = cpu.get(`${name}|false`) ?? [];
    process.stdout.write(`    ${name.padEnd(11)} one statement ${f(one)}   separate statements ${f(two)}\n`);
  }
}
