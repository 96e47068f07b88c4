import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { databaseUrlOf, startWsvc, stopProcess, type WsvcProcess } from '../helpers/processes.js';
import { openTestStorage, testBackend } from '../helpers/storage.js';

// Backends: both — no lost or duplicated write across kills is a property of each database
// Tier: full — kill -9 of a server five times
// docs/api.md#deployment: a real server SIGKILLed at random moments, 5 times, while clients send creates with
// Idempotency-Key and retry each one (same key, same body) until they get an answer. Every
// acknowledged create exists once, with its one event; no retry created a second resource. One client creates API
// keys the same way: each acknowledged key exists once, with its one `key.created` platform event.

let storage: Awaited<ReturnType<typeof openTestStorage>>;
let server: WsvcProcess | undefined;
beforeAll(async () => {
  storage = await openTestStorage();
});
afterAll(async () => {
  if (server) await stopProcess(server.child, 'SIGKILL');
  await storage.close();
});

const KILLS = 5;
const CLIENTS = 6;

describe('crash loop under idempotent writes', () => {
  it('kill -9 five times: no duplicate, no lost acknowledged write, every write with its event', async () => {
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
      name: 'Crash loop',
      adminEmail: 'crash@example.test',
    });
    const headers = { authorization: `Bearer ${ws.keys.live.key}`, 'content-type': 'application/json' };
    const env = { DATABASE_URL: databaseUrlOf(storage), PORT: '0', REDIS_URL: '' };
    let base = '';
    let finishing = false;
    const acknowledged = new Map<string, string>(); // idempotency key (= name) → id answered
    const keysAcknowledged = new Map<string, string>(); // the same, of the keys client
    let retries = 0;

    // One client: creates c<n>-<i> in turn, retrying each until some server answers it (`keys`: API keys k-<i>).
    const client = async (c: number | 'keys') => {
      for (let i = 0; !finishing || i === 0; i++) {
        const name = c === 'keys' ? `k-${i}` : `c${c}-${i}`;
        for (;;) {
          try {
            const res = await fetch(`${base}/v1/${c === 'keys' ? 'keys' : 'resources'}`, {
              method: 'POST',
              headers: { ...headers, 'idempotency-key': name },
              body: JSON.stringify(c === 'keys' ? { name, env: 'live' } : { name, type: 'standard' }),
            });
            const body = (await res.json()) as { data?: { id: string } };
            if (res.status === 201 && body.data) {
              (c === 'keys' ? keysAcknowledged : acknowledged).set(name, body.data.id);
              break;
            }
            retries++; // a 5xx while the server dies: retry the same request
          } catch {
            retries++; // no server (killed, not restarted yet)
          }
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };

    server = await startWsvc(['serve', '--api-only'], env);
    base = server.url;
    const clients = [...Array.from({ length: CLIENTS }, (_, c) => client(c)), client('keys')];
    for (let k = 0; k < KILLS; k++) {
      await new Promise((r) => setTimeout(r, 300 + Math.random() * 700));
      await stopProcess(server.child, 'SIGKILL');
      server = await startWsvc(['serve', '--api-only'], env);
      base = server.url;
    }
    finishing = true;
    await Promise.all(clients);

    const rows = await storage.db
      .selectFrom('resources')
      .select(['id', 'name'])
      .where('workspace_id', '=', ws.workspace.id)
      .execute();
    const byName = new Map<string, string[]>();
    for (const r of rows) byName.set(r.name, [...(byName.get(r.name) ?? []), r.id]);
    const duplicates = [...byName.values()].filter((ids) => ids.length > 1).length;
    console.log(
      `crash loop (${testBackend()}): ${KILLS} kills, ${acknowledged.size} acknowledged creates, ${keysAcknowledged.size} keys, ${rows.length} stored, ${duplicates} duplicates, ${retries} retried requests`,
    );
    expect(duplicates).toBe(0);
    // Every acknowledged create is there once, under the id it was answered with; nothing else is.
    expect(rows.length).toBe(acknowledged.size);
    for (const [name, id] of acknowledged) expect(byName.get(name)).toEqual([id]);
    // Each with exactly one resource.created event.
    const events = await storage.db
      .selectFrom('events')
      .select(['resource_id'])
      .where('workspace_id', '=', ws.workspace.id)
      .where('type', '=', 'resource.created')
      .execute();
    expect(events.map((e) => e.resource_id).sort()).toEqual(rows.map((r) => r.id).sort());
    // Every acknowledged key once, under its answered id, each with exactly one key.created event.
    const keys = await storage.db
      .selectFrom('api_keys')
      .select(['id', 'name'])
      .where('workspace_id', '=', ws.workspace.id)
      .where('name', 'like', 'k-%')
      .execute();
    expect(keys.map((k) => `${k.name} ${k.id}`).sort()).toEqual(
      [...keysAcknowledged].map(([name, id]) => `${name} ${id}`).sort(),
    );
    const keyEvents = await storage.db
      .selectFrom('events')
      .select(['payload'])
      .where('workspace_id', '=', ws.workspace.id)
      .where('type', '=', 'key.created')
      .execute();
    const told = keyEvents.map((e) => (JSON.parse(e.payload) as { data: { key: { id: string } } }).data.key.id);
    expect(told.sort()).toEqual(keys.map((k) => k.id).sort());
    expect(keysAcknowledged.size).toBeGreaterThan(0);
    if (testBackend() === 'sqlite') {
      const check = await sql<{ integrity_check: string }>`pragma integrity_check`.execute(storage.db);
      expect(check.rows.map((r) => r.integrity_check)).toEqual(['ok']);
    }
  }, 180_000);
});
