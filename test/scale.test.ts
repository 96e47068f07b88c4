import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWorkspace, startTestApp, type TestApp } from './helpers/app.js';
import { startApi, stopProcess } from './helpers/processes.js';
import { openTestStorage } from './helpers/storage.js';

// Issue 4, scale test: real `wsvc serve --api-only` child processes on one PostgreSQL schema and
// one Redis. Only with TEST_DATABASE_URL and TEST_REDIS_URL. The worker half (1,000 events, kill -9)
// waits for the delivery worker of issue 3 (see docs/operations.md).
const pgUrl = process.env.TEST_DATABASE_URL;
const redisUrl = process.env.TEST_REDIS_URL;

describe.skipIf(!pgUrl || !redisUrl)('scale: 2 API processes on one PostgreSQL and Redis (issue 4)', () => {
  let storage: Awaited<ReturnType<typeof openTestStorage>>;
  let t: TestApp;
  const apis: { child: ChildProcess; url: string }[] = [];
  const limit = 25;
  beforeAll(async () => {
    storage = await openTestStorage();
    t = await startTestApp({ storage, redisUrl: null });
    const env = {
      DATABASE_URL: `${pgUrl}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`,
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: `wsvc-test:${randomBytes(6).toString('hex')}:`,
      PORT: '0',
      LOG_LEVEL: 'info',
      DATABASE_POOL_SIZE: '4',
      RATE_LIMIT_LIVE: String(limit),
      RATE_LIMIT_WINDOW_S: '3600',
    };
    apis.push(...(await Promise.all([startApi(env), startApi(env)])));
  });
  afterAll(async () => {
    await Promise.all(apis.map(({ child }) => stopProcess(child)));
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
});
