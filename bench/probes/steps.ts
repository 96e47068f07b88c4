// Probe `steps` (docs/performance.md#probes): where the CPU of a GET /v1/resources/{id} goes, in-process and without
// HTTP or other processes: each step of the hot path timed alone in a tight loop, then whole requests through Fastify's
// inject (the full app, and a bare Fastify route answering the same JSON). Tight loops flatter every step (hot caches);
// the relative sizes are what this is for. SQLite. Run: `npm run bench -- --probe steps [--n 50000]`.
import { Command } from 'commander';
import Fastify from 'fastify';
import { requestIdGenerator } from '../../src/kernel/ids.js';
import { type ApiKeyPrincipal, systemActor } from '../../src/kernel/principal.js';
import { toPageRequest } from '../../src/lib/paging.js';
import { digestKey } from '../../src/modules/keys/key-format.js';
import { openInProcess } from './in-process.js';

async function time(name: string, n: number, fn: () => unknown): Promise<number> {
  for (let i = 0; i < n / 5; i++) {
    const x = fn();
    if (x && typeof (x as PromiseLike<unknown>).then === 'function') await x;
  }
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const x = fn();
    if (x && typeof (x as PromiseLike<unknown>).then === 'function') await x;
  }
  const c = process.cpuUsage(cpu0);
  const us = (c.user + c.system) / n;
  process.stdout.write(`${name.padEnd(52)} ${us.toFixed(2).padStart(7)} µs CPU\n`);
  return us;
}

/** Runs the probe with its command-line options (`args`, after the probe's name). */
export async function run(args: string[]): Promise<void> {
  const opts = new Command('steps')
    .option(
      '--n <n>',
      'calls per step (a list of 20: n/10; whole requests: n/2; creates: n/100, and n/1000 batches of 32)',
      Number,
      50_000,
    )
    .parse(args, { from: 'user' })
    .opts<{ n: number }>();
  const N = opts.n;
  // Plan limits off (openInProcess): the free plan's resource limit would refuse the creates below.
  const { app, services, storage, close } = await openInProcess({ name: 'micro' });
  try {
    const ws = await services.workspaces.create(services.uow.as(systemActor('cli')), {
      name: 'micro',
      adminEmail: 'micro@example.com',
    });
    const key = ws.keys.live.key;
    const header = `Bearer ${key}`;
    const verified = await services.keyRegistry.verify(header);
    if (!verified.ok) throw new Error('key did not verify');
    const actor: ApiKeyPrincipal = verified.principal;
    const r = await services.resources.create(services.uow.as(actor), {
      name: 'micro',
      type: 'standard',
      metadata: { k: 'v' },
    });

    process.stdout.write('steps of GET /v1/resources/{id}, alone:\n');
    const nextId = requestIdGenerator();
    await time('request id (prefix + counter)', N, () => nextId());
    await time('key digest (SHA-256)', N, () => digestKey(key));
    const epoch = storage.dialect.keysEpoch as () => number;
    await time('key-cache epoch (PRAGMA data_version)', N, () => epoch());
    await time('key verification, cached (digest + epoch + lookup)', N, () => services.keyRegistry.verifyNow(header));
    await time('resource read (service → repository → SQLite)', N, () => services.resources.get(actor, r.id));

    process.stdout.write('other operations, alone:\n');
    const page = toPageRequest({ limit: 20 });
    for (let i = 0; i < 30; i++)
      await services.resources.create(services.uow.as(actor), {
        name: `m${i}`,
        type: 'standard',
        metadata: { i: String(i) },
      });
    await time('list of 20 (service → repository → SQLite, total)', N / 10, () =>
      services.resources.list(actor, {}, page),
    );
    await time('create, one at a time (a commit each)', Math.max(5, Math.round(N / 100)), () =>
      services.resources.create(services.uow.as(actor), { name: 'x', type: 'standard', metadata: { a: 'b' } }),
    );
    await time('create, 32 at once (one group commit)', Math.max(2, Math.round(N / 1000)), () =>
      Promise.all(
        Array.from({ length: 32 }, () =>
          services.resources.create(services.uow.as(actor), { name: 'x', type: 'standard', metadata: { a: 'b' } }),
        ),
      ),
    );
    process.stdout.write('whole requests through inject (no sockets):\n');
    const body = JSON.stringify({ data: r });
    const bare = Fastify({ logger: false });
    bare.get('/baseline', async (_req, reply) => reply.type('application/json').send(body));
    await bare.ready();
    const inj = { method: 'GET' as const, url: `/v1/resources/${r.id}`, headers: { authorization: header } };
    const res = await app.inject(inj);
    if (res.statusCode !== 200) throw new Error(`GET answered ${res.statusCode}: ${res.body}`);
    const full = await time('GET /v1/resources/{id}, whole app', N / 2, () => app.inject(inj));
    const base = await time('bare Fastify route, same JSON', N / 2, () =>
      bare.inject({ method: 'GET', url: '/baseline' }),
    );
    process.stdout.write(
      `${'difference (the API on top of bare Fastify)'.padEnd(52)} ${(full - base).toFixed(2).padStart(7)} µs CPU\n`,
    );
    await bare.close();
  } finally {
    await close();
  }
}
