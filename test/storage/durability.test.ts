import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { databaseUrlOf, startWsvc, stopProcess, type WsvcProcess } from '../helpers/processes.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — acknowledged writes survive a crash on each database
// Tier: full — kill -9 of a server during writes
// docs/api.md#deployment: an acknowledged write survives a crash of the process. A real `wsvc serve`
// takes concurrent creates and updates and is killed with SIGKILL while requests are in flight;
// after a restart every acknowledged write is there, each with its event (outbox).

let storage: Awaited<ReturnType<typeof openTestStorage>>;
let server: WsvcProcess | undefined;
beforeAll(async () => {
  storage = await openTestStorage();
});
afterAll(async () => {
  if (server) await stopProcess(server.child, 'SIGKILL');
  await storage.close();
});

describe('kill -9 during writes (docs/api.md#deployment)', () => {
  it('loses no acknowledged write and no committed event', async () => {
    const config = loadConfig(
      {},
      {
        SECRETS_KEY: process.env.SECRETS_KEY || undefined,
        DATABASE_URL: storage.url,
        LOG_LEVEL: 'silent',
        PLAN_LIMITS: 'off',
      },
    );
    const services = createServices({ storage, clock: systemClock, config });
    const ws = await services.workspaces.create(asCli(services), {
      name: 'Durable',
      adminEmail: 'durable@example.test',
    });
    const headers = { authorization: `Bearer ${ws.keys.live.key}`, 'content-type': 'application/json' };
    const env = { DATABASE_URL: databaseUrlOf(storage), PORT: '0', REDIS_URL: '' };
    server = await startWsvc(['serve', '--api-only'], env);
    const base = server.url;

    const acknowledged = new Map<string, string>(); // id → name as acknowledged
    let stop = false;
    const client = async (c: number) => {
      for (let i = 0; !stop; i++) {
        try {
          const res = await fetch(`${base}/v1/resources`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ name: `c${c}-${i}`, type: 'standard' }),
          });
          if (res.status !== 201) continue;
          const { data } = (await res.json()) as { data: { id: string; name: string } };
          acknowledged.set(data.id, data.name);
          const put = await fetch(`${base}/v1/resources/${data.id}`, {
            method: 'PUT',
            headers,
            body: JSON.stringify({ name: `${data.name}-renamed` }),
          });
          if (put.status === 200) acknowledged.set(data.id, `${data.name}-renamed`);
        } catch {
          return; // the server is gone
        }
      }
    };
    const clients = Array.from({ length: 8 }, (_, c) => client(c));
    while (acknowledged.size < 150) await new Promise((r) => setTimeout(r, 10));
    await stopProcess(server.child, 'SIGKILL');
    stop = true;
    await Promise.all(clients);

    server = await startWsvc(['serve', '--api-only'], env);
    const rows = await storage.db
      .selectFrom('resources')
      .select(['id', 'name'])
      .where('workspace_id', '=', ws.workspace.id)
      .execute();
    const stored = new Map(rows.map((r) => [r.id, r.name]));
    for (const [id, name] of acknowledged) {
      // The stored name is the acknowledged one, or a later one whose answer the crash swallowed.
      expect([name, `${name}-renamed`]).toContain(stored.get(id));
    }
    // Every stored change has its event: one resource.created per resource, one updated per rename.
    const events = await storage.db
      .selectFrom('events')
      .select(['type', 'resource_id'])
      .where('workspace_id', '=', ws.workspace.id)
      .execute();
    const created = new Set(events.filter((e) => e.type === 'resource.created').map((e) => e.resource_id));
    const updated = new Set(events.filter((e) => e.type === 'resource.updated').map((e) => e.resource_id));
    expect(created).toEqual(new Set(stored.keys()));
    expect(updated).toEqual(new Set([...stored].filter(([, n]) => n.endsWith('-renamed')).map(([id]) => id)));
    // And the restarted server serves them.
    for (const id of [...acknowledged.keys()].slice(-5)) {
      expect((await fetch(`${server.url}/v1/resources/${id}`, { headers })).status).toBe(200);
    }
    console.log(
      `durability: ${acknowledged.size} acknowledged creates, ${stored.size} stored after kill -9 and restart`,
    );
  }, 60_000);
});
