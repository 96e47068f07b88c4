import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { eventually } from '../helpers/receiver.js';

// Backends: sqlite — the Redis breaker against its own redis-server; the database plays no part
// Tier: full — a redis-server child stopped and resumed (SIGSTOP)
// A hung Redis (SIGSTOP: the connection stays open, nothing answers). Only the
// requests already waiting on it pay REDIS_COMMAND_TIMEOUT_MS; the breaker then sends the rest to
// in-process counters at once; /readyz says so; one warning per outage, one line on recovery.
// Uses its own redis-server on a free port, never the machine's shared one.
const hasRedisServer = (() => {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const COMMAND_TIMEOUT_MS = 300;

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe.skipIf(!hasRedisServer)('a hung Redis: timeout, circuit breaker, /readyz, logs', () => {
  let server: ChildProcess;
  let t: TestApp;
  let ws: TestWorkspace;
  const logs: { level: 'warn' | 'info'; msg: string; obj: object }[] = [];
  beforeAll(async () => {
    const port = await freePort();
    server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    const url = `redis://127.0.0.1:${port}`;
    await eventually(async () => {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => {});
      const ok = await probe.connect().then(
        () => probe.ping().then(() => true),
        () => false,
      );
      probe.disconnect();
      return ok;
    });
    t = await startTestApp({
      redisUrl: url,
      redisLog: {
        warn: (obj, msg) => logs.push({ level: 'warn', msg, obj }),
        info: (obj, msg) => logs.push({ level: 'info', msg, obj }),
      },
      config: { REDIS_COMMAND_TIMEOUT_MS: COMMAND_TIMEOUT_MS, RATE_LIMIT_TEST: 3, RATE_LIMIT_WINDOW_S: 3600 },
    });
    ws = await newWorkspace(t);
  });
  afterAll(async () => {
    server?.kill('SIGCONT');
    server?.kill('SIGKILL');
    await t?.close();
  });

  const get = async (key = ws.live) => {
    const started = Date.now();
    const res = await t.request({ method: 'GET', url: '/v1/resources', key });
    return { status: res.statusCode, ms: Date.now() - started, res };
  };

  it('costs one command timeout, then nothing; counts in-process meanwhile; logs once each way', async () => {
    expect((await get()).status).toBe(200);
    expect(json(await t.request({ method: 'GET', url: '/readyz' }))).toMatchObject({ redis: 'ok' });
    server.kill('SIGSTOP');
    const stoppedAt = Date.now();

    const first = await get();
    const detectedMs = Date.now() - stoppedAt;
    const rest: number[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await get();
      expect(r.status).toBe(200);
      rest.push(r.ms);
    }
    const ready = await t.request({ method: 'GET', url: '/readyz' });
    const total = rest.reduce((a, b) => a + b, 0);
    console.log(
      `hung Redis: first request ${first.ms} ms (detected after ${detectedMs} ms, command timeout ${COMMAND_TIMEOUT_MS} ms); next 20 requests ${total} ms in all (max ${Math.max(...rest)} ms)`,
    );
    expect(first.status).toBe(200);
    // Without the breaker each request pays the timeout (20 × 300 ms); generous for a loaded machine.
    expect(total).toBeLessThan(10 * COMMAND_TIMEOUT_MS);
    expect(ready.statusCode).toBe(200);
    expect(json(ready)).toMatchObject({ status: 'ready', database: 'ok', redis: 'not_responding' });

    // Limits still hold meanwhile, counted in this process: the test key's 4th request is a 429.
    const testKey = await Promise.all([1, 2, 3, 4].map(() => get(ws.test)));
    expect(testKey.map((r) => r.status).sort()).toEqual([200, 200, 200, 429]);
    const limited = testKey.find((r) => r.status === 429);
    expect(json(limited?.res as never).error.code).toBe('rate_limited');

    expect(logs.filter((l) => l.level === 'warn')).toHaveLength(1);
    expect(logs[0]).toMatchObject({ level: 'warn', msg: expect.stringContaining('redis unavailable') });
    expect(logs[0]?.obj).toMatchObject({ redis: 'not_responding' });

    server.kill('SIGCONT');
    const resumed = Date.now();
    await eventually(async () => json(await t.request({ method: 'GET', url: '/readyz' })).redis === 'ok', 10_000);
    console.log(`Redis back: breaker closed ${Date.now() - resumed} ms after SIGCONT`);
    expect(logs.filter((l) => l.level === 'warn')).toHaveLength(1);
    expect(logs.filter((l) => l.level === 'info')).toHaveLength(1);
    expect(logs.at(-1)).toMatchObject({ level: 'info', msg: expect.stringContaining('redis reachable again') });
    expect((await get()).status).toBe(200);
  }, 60_000);
});
