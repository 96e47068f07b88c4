import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { databaseUrlOf, startWsvc, stopProcess, type WsvcProcess } from '../helpers/processes.js';
import { type Received, type Reply, startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — at-least-once delivery across a kill rests on the stored outbox and leases
// Tier: full — kill -9 of a `wsvc serve` child process
// docs/api.md#webhook-deliveries (delivery is at least once, across crashes): a real `wsvc serve` child process on a real database,
// killed with SIGKILL while attempts are in flight and while retries are pending, then restarted.
// Every event must still reach the receiver with a 2xx, always under the same event id: resource events, platform
// events (key.created) and the operator's (workspace.created, docs/api.md#operator-events) alike.

const EVENTS = 20;
/** Keys made through the API during the run: one `key.created` platform event each. */
const KEYS = 3;
const OPERATOR_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let env: NodeJS.ProcessEnv;
let server: WsvcProcess | undefined;

/** Per event id: 1st attempt hangs (the process dies under it), 2nd fails with 500, then 200. */
const seen = new Map<string, number>();
const handler = (r: Received): Reply => {
  if (r.path === '/slow') return { status: 200, delayMs: 700 }; // SIGTERM arrives while it is in flight
  const id = JSON.parse(r.body).id as string;
  const n = (seen.get(id) ?? 0) + 1;
  seen.set(id, n);
  if (n === 1) return 'hang';
  if (n === 2) return { status: 500 };
  return { status: 200 };
};
let rx: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  storage = await openTestStorage();
  rx = await startReceiver(handler);
  env = {
    DATABASE_URL: databaseUrlOf(storage),
    PORT: '0',
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
    WEBHOOK_TIMEOUT_MS: '1500', // lease = 2 × timeout + 1 s = 4 s
    WEBHOOK_RETRY_BASE_MS: '1000',
    WEBHOOK_RETRY_FACTOR: '1',
    WEBHOOK_POLL_MS: '100',
    REDIS_URL: '',
    OPERATOR_WEBHOOK_URL: rx.url('/ops'),
    OPERATOR_WEBHOOK_SECRET: OPERATOR_SECRET,
  };
});
afterAll(async () => {
  if (server) await stopProcess(server.child, 'SIGKILL');
  await rx.close();
  await storage.close();
});

const api = async (method: string, path: string, key: string, body?: unknown) => {
  if (!server) throw new Error('no server');
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: res.status === 204 ? null : await res.json() };
};

describe('kill -9 and restart (at least once, docs/api.md#webhook-deliveries)', () => {
  it('every event reaches the receiver with a 2xx and the same event id', async () => {
    const config = loadConfig(
      {},
      {
        SECRETS_KEY: process.env.SECRETS_KEY || undefined,
        DATABASE_URL: storage.url,
        LOG_LEVEL: 'silent',
        PLAN_LIMITS: 'off',
        OPERATOR_WEBHOOK_URL: rx.url('/ops'),
        OPERATOR_WEBHOOK_SECRET: OPERATOR_SECRET,
      },
    );
    const services = createServices({ storage, clock: systemClock, config });
    // Its operator event (workspace.created) is written with it, and sent by the server started below.
    const ws = await services.workspaces.create(asCli(services), { name: 'Crash', adminEmail: 'crash@example.test' });
    const key = ws.keys.live.key;

    server = await startWsvc(['serve'], env);
    expect((await api('POST', '/v1/webhooks', key, { url: rx.url('/in'), events: ['*'] })).status).toBe(201);
    for (let i = 0; i < EVENTS; i++) {
      expect((await api('POST', '/v1/resources', key, { name: `r${i}`, type: 'standard' })).status).toBe(201);
      if (i < KEYS) expect((await api('POST', '/v1/keys', key, { name: `k${i}`, env: 'live' })).status).toBe(201);
    }
    const TOTAL = EVENTS + KEYS + 1;
    // 1st crash: every first attempt is in flight (the receiver holds them open).
    await rx.until(() => seen.size === TOTAL);
    await stopProcess(server.child, 'SIGKILL');

    server = await startWsvc(['serve'], env);
    // 2nd crash: after the leases lapsed and some second attempts failed, retries are pending.
    await rx.until(() => [...seen.values()].filter((n) => n >= 2).length >= TOTAL / 2, 20_000);
    await stopProcess(server.child, 'SIGKILL');

    server = await startWsvc(['serve'], env);
    await rx.until(() => [...seen.values()].every((n) => n >= 3) && seen.size === TOTAL, 30_000);
    const events = await storage.db.selectFrom('events').select(['id', 'type']).execute();
    const operator = await storage.db.selectFrom('operator_deliveries').select(['event_id', 'event_type']).execute();
    // Each event recorded once, and received (to its 2xx) under that one id.
    expect(events.filter((e) => e.type === 'resource.created')).toHaveLength(EVENTS);
    expect(events.filter((e) => e.type === 'key.created')).toHaveLength(KEYS);
    expect(events).toHaveLength(EVENTS + KEYS);
    expect(operator.map((o) => o.event_type)).toEqual(['workspace.created']);
    const ids = [...events.map((e) => e.id), ...operator.map((o) => o.event_id)].sort();
    expect([...seen.keys()].sort()).toEqual(ids);
    expect(new Set(rx.to('/ops').map((r) => r.headers['webhook-id']))).toEqual(new Set([operator[0]?.event_id]));
    // The log agrees once the last outcomes are written.
    const deadline = Date.now() + 10_000;
    let statuses: string[] = [];
    while (Date.now() < deadline) {
      statuses = (await storage.db.selectFrom('deliveries').select('status').execute()).map((d) => d.status);
      if (statuses.every((s) => s === 'succeeded')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(statuses).toEqual(Array(EVENTS + KEYS).fill('succeeded'));
    const opStatuses = (await storage.db.selectFrom('operator_deliveries').select('status').execute()).map(
      (d) => d.status,
    );
    expect(opStatuses).toEqual(['succeeded']);
    const dup = [...seen.values()].filter((n) => n > 3).length;
    console.log(`crash test: ${TOTAL} events, ${rx.received.length} requests, ${dup} events delivered more than once`);
  }, 90_000);

  it('SIGTERM finishes the attempts in flight, records them, and exits', async () => {
    if (!server) throw new Error('no server');
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
    const ws = await services.workspaces.create(asCli(services), { name: 'Term', adminEmail: 'term@example.test' });
    const key = ws.keys.live.key;
    expect((await api('POST', '/v1/webhooks', key, { url: rx.url('/slow'), events: ['*'] })).status).toBe(201);
    expect((await api('POST', '/v1/resources', key, { name: 'slow', type: 'standard' })).status).toBe(201);
    await rx.until(() => rx.to('/slow').length === 1);
    const exited = new Promise<number | null>((r) => server?.child.once('exit', (code) => r(code)));
    server.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    server = undefined;
    const rows = await storage.db
      .selectFrom('deliveries')
      .select(['status', 'attempt_count', 'leased_by'])
      .where('workspace_id', '=', ws.workspace.id)
      .execute();
    expect(rows).toEqual([{ status: 'succeeded', attempt_count: 1, leased_by: null }]);
  }, 30_000);
});
