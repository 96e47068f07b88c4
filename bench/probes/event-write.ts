// Probe `event-write` (docs/performance.md#probes): a POST /v1/resources through Fastify's inject (no sockets, no
// other process), 32 at once (one group commit on SQLite, as under load), in CPU µs of this process
// (`process.cpuUsage`); on PostgreSQL also the round trips (pg query calls, a held string of deferred statements counted
// once) and the statements per POST by kind (BEGIN, COMMIT and the audit numbering's transaction after the commit
// included). Two workspaces: one with no webhook and no integration, one with 2 enabled webhooks and 1 Slack
// integration (the events are queued, never sent here). Then the two reads a cached receivers' answer saves.
// SQLite; PostgreSQL with TEST_DATABASE_URL. Run: `npm run bench -- --probe event-write [--n 2048] [--rounds 5]`.

import { Command } from 'commander';
import { systemActor } from '../../src/kernel/principal.js';
import { integrationsRepository } from '../../src/modules/integrations/integrations.repository.js';
import { deliveriesRepository } from '../../src/modules/webhooks/deliveries.repository.js';
import { countRoundTrips, openInProcess, pgRoundTrips, pgStatements as statements } from './in-process.js';

/** Runs the probe with its command-line options (`args`, after the probe's name). */
export async function run(args: string[]): Promise<void> {
  const opts = new Command('event-write')
    .option('--n <n>', 'POSTs per round and workspace (a multiple of 32)', Number, 2048)
    .option('--rounds <n>', 'rounds, alternating the two workspaces', Number, 5)
    .parse(args, { from: 'user' })
    .opts<{ n: number; rounds: number }>();
  const N = opts.n;
  const ROUNDS = opts.rounds;
  countRoundTrips();
  const pgUrl = process.env.TEST_DATABASE_URL;
  const { app, services, storage, close } = await openInProcess({ name: 'event-write', pgUrl });
  try {
    const workspace = async (name: string, receivers: boolean) => {
      const ws = await services.workspaces.create(services.uow.as(systemActor('cli')), {
        name,
        adminEmail: `${name}@example.com`,
      });
      const verified = await services.keyRegistry.verify(`Bearer ${ws.keys.live.key}`);
      if (!verified.ok) throw new Error('key did not verify');
      if (receivers) {
        const p = verified.principal;
        await services.webhooks.create(services.uow.as(p), { url: 'https://receiver.example.com/a', events: ['*'] });
        await services.webhooks.create(services.uow.as(p), {
          url: 'https://receiver.example.com/b',
          events: ['resource.created'],
        });
        await services.integrations.create(services.uow.as(p), {
          kind: 'slack',
          url: 'https://hooks.slack.com/services/T000/B000/benchsecret1234',
          env: 'live',
          events: ['*'],
          categories: [],
        });
      }
      return {
        name,
        id: ws.workspace.id,
        headers: { authorization: `Bearer ${ws.keys.live.key}`, 'content-type': 'application/json' },
      };
    };
    const sides = [await workspace('none', false), await workspace('receivers', true)];
    const payload = JSON.stringify({ name: 'x', type: 'standard', metadata: { a: 'b' } });
    const post = async (headers: Record<string, string>) => {
      const res = await app.inject({ method: 'POST', url: '/v1/resources', headers, payload });
      if (res.statusCode !== 201) throw new Error(`POST answered ${res.statusCode}: ${res.body}`);
    };
    for (const s of sides) for (let i = 0; i < N / 5; i++) await post(s.headers); // warm-up
    const cpu: Record<string, number[]> = { none: [], receivers: [] };
    const perPost: Record<string, Map<string, number>> = {};
    const tripsPerPost: Record<string, number> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
        statements.clear();
        pgRoundTrips.n = 0;
        const c0 = process.cpuUsage();
        for (let i = 0; i < N; i += 32) await Promise.all(Array.from({ length: 32 }, () => post(s.headers)));
        const c = process.cpuUsage(c0);
        cpu[s.name]?.push((c.user + c.system) / N);
        perPost[s.name] = new Map(statements);
        tripsPerPost[s.name] = pgRoundTrips.n / N;
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    process.stdout.write(`${pgUrl ? 'postgres' : 'sqlite'}: ${ROUNDS} rounds of ${N} POSTs per workspace\n`);
    for (const s of sides) {
      const xs = cpu[s.name] ?? [];
      process.stdout.write(
        `  ${s.name.padEnd(10)} CPU µs/POST median ${median(xs).toFixed(0)} (${xs.map((x) => x.toFixed(0)).join(', ')})\n`,
      );
      const counts = perPost[s.name];
      if (pgUrl && counts) {
        const total = [...counts.values()].reduce((a, b) => a + b, 0);
        process.stdout.write(`    round trips per POST: ${(tripsPerPost[s.name] ?? NaN).toFixed(2)}\n`);
        process.stdout.write(`    statements per POST: ${(total / N).toFixed(2)}\n`);
        // `execute wsvc_qN_sql(…)` by the SQL it runs.
        const named = new Map([...(storage.dialect.statementNames ?? [])].map(([text, name]) => [name, text]));
        const byKind = new Map<string, number>();
        for (const [kind, n] of counts) {
          const m = /^execute (wsvc_q\d+)/.exec(kind);
          const text = m?.[1] ? named.get(m[1]) : undefined;
          const k = text ? `execute: ${text.split(/\s+/).slice(0, 3).join(' ').toLowerCase().slice(0, 40)}` : kind;
          byKind.set(k, (byKind.get(k) ?? 0) + n);
        }
        for (const [kind, n] of [...byKind].sort((a, b) => b[1] - a[1])) {
          process.stdout.write(`      ${(n / N).toFixed(2).padStart(5)}  ${kind}\n`);
        }
      }
    }
    // What a cache hit saves: the two reads each event made (outside a transaction here: SQLite's cheapest path).
    const reads = async (workspaceId: string) => {
      await integrationsRepository.enabledOf(storage.db, workspaceId);
      await deliveriesRepository.subscribers(storage.db, { workspaceId, env: 'live' });
    };
    for (const s of sides) {
      const n = pgUrl ? 2000 : 50_000;
      for (let i = 0; i < n / 5; i++) await reads(s.id);
      const c0 = process.cpuUsage();
      for (let i = 0; i < n; i++) await reads(s.id);
      const c = process.cpuUsage(c0);
      process.stdout.write(
        `  ${s.name.padEnd(10)} the two reads alone: ${((c.user + c.system) / n).toFixed(1)} µs CPU\n`,
      );
    }
  } finally {
    await close();
  }
}
