import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { databaseUrlOf, startWsvc, stopProcess, type WsvcProcess } from '../helpers/processes.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — the revoke's locking differs: fair row locks on PostgreSQL, BEGIN IMMEDIATE on SQLite
// Tier: full — a `wsvc serve` child process under 32 concurrent requests, with a time bound
// Revocation always wins (docs/api.md#keys-scopes-and-roles). A real server takes 32 requests at a time with one key while
// another process's connection (the CLI's, here this test's services) revokes it: the revoke
// commits at once, and no write that had not committed by then changes anything.

let storage: Awaited<ReturnType<typeof openTestStorage>>;
let server: WsvcProcess | undefined;
beforeAll(async () => {
  storage = await openTestStorage();
});
afterAll(async () => {
  if (server) await stopProcess(server.child, 'SIGKILL');
  await storage.close();
});

/**
 * The target is 100 ms. Measured here (the revoke's own duration, once, no retry) it is 25-110 ms
 * on PostgreSQL on an idle 2-core machine and up to ~350 ms when the machine runs other test suites
 * (load 15): then BEGIN, UPDATE and COMMIT alone take that long, with or without the writes. The
 * bound below holds under such load and still fails the old design (FOR SHARE on the key row: the
 * revoke starved for 1.2-3.2 s in this test, ~7 s in the issue). SQLite has no fair lock queue:
 * the revoking process's BEGIN IMMEDIATE polls between the server's group commits.
 */
const REVOKE_BOUND_MS = 500;

async function resourcesOf(workspaceId: string): Promise<number> {
  const r = await storage.db
    .selectFrom('resources')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

describe('revoking a key in use by 32 concurrent requests', () => {
  it('commits within the bound, and nothing that commits after it was written with the key', async () => {
    const config = loadConfig(
      {},
      {
        SECRETS_KEY: process.env.SECRETS_KEY || undefined,
        LOG_LEVEL: 'silent',
        DATABASE_URL: storage.url,
        PLAN_LIMITS: 'off',
      },
    );
    const cli = createServices({ storage, clock: systemClock, config });
    const ws = await cli.workspaces.create(asCli(cli), { name: 'Revoke', adminEmail: 'revoke@example.test' });
    const key = ws.keys.live;
    // The server's pool as in production (10), so 10 writes with the key are in flight at once.
    const env = { DATABASE_URL: databaseUrlOf(storage), PORT: '0', REDIS_URL: '', DATABASE_POOL_SIZE: '10' };
    server = await startWsvc(['serve', '--api-only'], env);
    const base = server.url;
    const headers = { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' };

    let stop = false;
    const statuses: number[] = [];
    const loop = async (c: number) => {
      for (let i = 0; !stop; i++) {
        const res = await fetch(i % 2 ? `${base}/v1/resources` : `${base}/v1/users/me`, {
          method: i % 2 ? 'POST' : 'PATCH',
          headers,
          body: JSON.stringify(i % 2 ? { name: `c${c}-${i}`, type: 'standard' } : { name: `n${c}-${i}` }),
        });
        await res.arrayBuffer();
        statuses.push(res.status);
        if (res.status === 401) return;
      }
    };
    const loops = Array.from({ length: 32 }, (_, c) => loop(c));
    while (statuses.length < 300) await new Promise((r) => setTimeout(r, 5));

    const started = performance.now();
    await cli.keyRegistry.revoke(asCli(cli), key.id);
    const revokeMs = performance.now() - started;
    const atRevoke = await resourcesOf(ws.workspace.id);
    await Promise.all(loops);
    stop = true;

    // Every loop ends on a 401, and no write committed after the revocation did.
    expect(await resourcesOf(ws.workspace.id)).toBe(atRevoke);
    expect(statuses.filter((s) => s === 401).length).toBe(32);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    console.log(`revoke under 32 concurrent requests: ${revokeMs.toFixed(1)} ms (${statuses.length} requests)`);
    expect(revokeMs).toBeLessThan(REVOKE_BOUND_MS);
  });
});
