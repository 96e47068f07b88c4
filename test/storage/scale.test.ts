import { type ChildProcess, execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { databaseUrlOf, startApi, startWsvc, stopProcess, type WsvcProcess } from '../helpers/processes.js';
import { type Received, startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: postgres — two API processes and two workers on one PostgreSQL schema and one Redis
// Tier: full — PostgreSQL/Redis only, and `npm test` runs on SQLite
// docs/operations.md, scale test: 2 real `wsvc serve --api-only` and 2 `wsvc worker` child processes on one
// PostgreSQL schema and one Redis. Only with TEST_DATABASE_URL and TEST_REDIS_URL.
const pgUrl = process.env.TEST_DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL;

describe.skipIf(!pgUrl || !redisUrl)('scale: 2 API processes on one PostgreSQL and Redis (docs/operations.md)', () => {
  let storage: Awaited<ReturnType<typeof openTestStorage>>;
  let t: TestApp;
  const apis: { child: ChildProcess; url: string }[] = [];
  const workers: WsvcProcess[] = [];
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let env: NodeJS.ProcessEnv;
  const limit = 25;
  beforeAll(async () => {
    storage = await openTestStorage();
    t = await startTestApp({ storage, redisUrl: null });
    rx = await startReceiver();
    env = {
      DATABASE_URL: databaseUrlOf(storage),
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: `wsvc-test:${randomBytes(6).toString('hex')}:`,
      PORT: '0',
      LOG_LEVEL: 'info',
      DATABASE_POOL_SIZE: '4',
      RATE_LIMIT_LIVE: String(limit),
      RATE_LIMIT_WINDOW_S: '3600',
      // The fan-out below uses a test key: 1,500 requests per window by default (docs/api.md#rate-limits).
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
      WEBHOOK_TIMEOUT_MS: '2000', // lease 5 s: a killed worker's claims return after it
      WEBHOOK_POLL_MS: '1000',
    };
    apis.push(...(await Promise.all([startApi(env), startApi(env)])));
    workers.push(...(await Promise.all([startWsvc(['worker'], env), startWsvc(['worker'], env)])));
  });
  afterAll(async () => {
    await Promise.all([...apis, ...workers].map(({ child }) => stopProcess(child)));
    await rx.close();
    await t.close();
    await storage.close();
  });

  it("a key's rate limit holds across both API processes (successes never exceed the limit)", async () => {
    const ws = await newWorkspace(t);
    const total = 100;
    const started = Date.now();
    const statuses = await Promise.all(
      Array.from({ length: total }, (_, i) =>
        fetch(`${apis[i % 2]?.url}/v1/resources`, { headers: { authorization: `Bearer ${ws.live}` } }).then(
          async (r) => {
            await r.arrayBuffer();
            return r.status;
          },
        ),
      ),
    );
    const ok = statuses.filter((s) => s === 200).length;
    const limited = statuses.filter((s) => s === 429).length;
    console.log(
      `scale: ${total} requests over 2 API processes, limit ${limit}: ${ok} x 200, ${limited} x 429 in ${Date.now() - started} ms`,
    );
    expect(ok).toBe(limit);
    expect(limited).toBe(total - limit);
    // Both processes report the database and the shared Redis as reachable.
    for (const api of apis) {
      const r = await fetch(`${api.url}/readyz`);
      expect(await r.json()).toMatchObject({ status: 'ready', database: 'ok', redis: 'ok' });
    }
  });

  it('a key revoked, demoted or removed through one process is refused by the other on its very next request', async () => {
    // Each API process caches verified keys under the epoch shared in Redis (src/modules/keys/keys-epoch.ts,
    // docs/api.md#keys-scopes-and-roles).
    const ws = await newWorkspace(t);
    const m = await ws.member('member');
    const n = await ws.member('member');
    const call = async (i: number, key: string, method = 'GET', path = '/v1/resources', body?: unknown) => {
      const r = await fetch(`${apis[i]?.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      await r.arrayBuffer();
      return r.status;
    };
    // Warm both processes' caches with both members' keys.
    for (let i = 0; i < 4; i++) {
      expect(await call(i % 2, m.live)).toBe(200);
      expect(await call(i % 2, n.live)).toBe(200);
    }
    // Revoked over HTTP through process 0: process 1's very next request with it is refused.
    expect(await call(0, ws.live, 'DELETE', `/v1/keys/${m.liveKeyId}`)).toBe(204);
    expect(await call(1, m.live)).toBe(401);
    expect(await call(0, m.live)).toBe(401);
    // The CLI (its own process, REDIS_URL set like the API's) demotes n, then removes n.
    const wsvc = (...args: string[]) =>
      promisify(execFile)(process.execPath, ['bin/wsvc.js', ...args], { env: { ...process.env, ...env } });
    await wsvc('users', 'set-role', n.userId, '--role', 'viewer');
    expect(await call(1, n.live, 'POST', '/v1/resources', { name: 'x', type: 'standard' })).toBe(403);
    expect(await call(0, n.live)).toBe(200);
    await wsvc('users', 'remove', n.userId);
    expect(await call(1, n.live)).toBe(401);
    expect(await call(0, n.live)).toBe(401);
  });

  it('1,000 events fan out through 2 workers; one killed with kill -9 midway, every event still arrives', async () => {
    const ws = await newWorkspace(t);
    const EVENTS = 1000;
    const api = (i: number, path: string, body: unknown) =>
      fetch(`${apis[i % 2]?.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.test}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      });
    expect(await api(0, '/v1/webhooks', { url: rx.url('/scale'), events: ['resource.created'] })).toBe(201);
    const started = Date.now();
    const statuses: number[] = [];
    let killedAt = -1;
    for (let i = 0; i < EVENTS; i += 50) {
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 50 }, (_, j) => api(i + j, '/v1/resources', { name: `r${i + j}`, type: 'standard' })),
        )),
      );
      if (killedAt < 0 && rx.received.length >= EVENTS / 4) {
        killedAt = rx.received.length;
        const victim = workers[0];
        if (victim) await stopProcess(victim.child, 'SIGKILL');
      }
    }
    expect(statuses.filter((s) => s === 201)).toHaveLength(EVENTS);
    const ids = () => new Set(rx.received.map((r: Received) => JSON.parse(r.body).id as string));
    await rx.until(() => ids().size === EVENTS, 60_000);
    const elapsed = Date.now() - started;
    const duplicates = rx.received.length - ids().size;
    console.log(
      `scale: ${EVENTS} events over 2 API processes and 2 workers (one killed after ${killedAt} deliveries): ` +
        `${ids().size} distinct events arrived, ${duplicates} duplicates, in ${elapsed} ms`,
    );
    expect(killedAt).toBeGreaterThan(0);
    const events = await storage.db.selectFrom('events').select('id').where('workspace_id', '=', ws.id).execute();
    expect(new Set(events.map((e) => e.id))).toEqual(ids());
    // While both workers lived, no event went out twice (SKIP LOCKED claims, docs/api.md#deployment)...
    const beforeKill = rx.received.slice(0, killedAt).map((r: Received) => JSON.parse(r.body).id as string);
    expect(new Set(beforeKill).size).toBe(beforeKill.length);
    // ...and duplicates can only come from attempts in flight when the worker died.
    expect(duplicates).toBeLessThanOrEqual(64);
  }, 120_000);
});
