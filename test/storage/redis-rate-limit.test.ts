import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { type CuttableProxy, hostPort, startProxy, viaPort } from '../helpers/proxy.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: postgres — the shared Redis of the postgres project (TEST_REDIS_URL)
// Tier: full — PostgreSQL/Redis only, and `npm test` runs on SQLite
// docs/operations.md / docs/api.md#rate-limits: with REDIS_URL, a key's counter is shared by every API process; Redis down fails
// open (requests are served, logged) and limits come back by themselves when Redis returns.
const redisUrl = process.env.TEST_REDIS_URL;

describe.skipIf(!redisUrl)(
  'Redis-backed rate limits across API processes (docs/operations.md, docs/api.md#rate-limits)',
  () => {
    let storage: Awaited<ReturnType<typeof openTestStorage>>;
    let proxy: CuttableProxy;
    let a: TestApp;
    let b: TestApp;
    const limit = 6;
    beforeAll(async () => {
      storage = await openTestStorage();
      proxy = await startProxy(hostPort(redisUrl as string));
      // Two app instances, one database, one Redis namespace: like two processes behind a balancer.
      const ns = `wsvc-test:${randomBytes(6).toString('hex')}:`;
      const common = { storage, rateLimitNamespace: ns, config: { RATE_LIMIT_LIVE: limit, RATE_LIMIT_WINDOW_S: 3600 } };
      a = await startTestApp({ ...common, redisUrl: viaPort(redisUrl as string, proxy.port) });
      b = await startTestApp({ ...common, redisUrl: viaPort(redisUrl as string, proxy.port) });
      await waitReady();
    });
    const waitReady = async () => {
      for (let i = 0; i < 100 && (a.redis?.status !== 'ready' || b.redis?.status !== 'ready'); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const waitBreakersClosed = async () => {
      const closed = async (app: TestApp) => json(await app.request({ method: 'GET', url: '/readyz' })).redis === 'ok';
      for (let i = 0; i < 100 && !((await closed(a)) && (await closed(b))); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    afterAll(async () => {
      await a.close();
      await b.close();
      await proxy.close();
      await storage.close();
    });

    it('never lets more than the limit through across both processes', async () => {
      const ws = await newWorkspace(a);
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? a : b).request({ method: 'GET', url: '/v1/resources', key: ws.live }),
        ),
      );
      const ok = results.filter((r) => r.statusCode === 200);
      const limited = results.filter((r) => r.statusCode === 429);
      expect(ok.length).toBe(limit);
      expect(limited.length).toBe(20 - limit);
      expect(json(limited[0] as never).error.code).toBe('rate_limited');
      expect(limited[0]?.headers['retry-after']).toBeDefined();
      expect(ok.map((r) => r.headers['x-ratelimit-limit'])).toEqual(Array(limit).fill(String(limit)));
      const remaining = ok.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort((x, y) => x - y);
      expect(remaining).toEqual(Array.from({ length: limit }, (_, i) => i));
    });

    it('fails open while Redis is down (readyz says so) and enforces limits again when it returns', async () => {
      const ws = await newWorkspace(a);
      await proxy.cut();
      const during = await Promise.all(
        Array.from({ length: limit + 4 }, (_, i) =>
          (i % 2 ? a : b).request({ method: 'GET', url: '/v1/resources', key: ws.live }),
        ),
      );
      expect(during.map((r) => r.statusCode)).toEqual(Array(limit + 4).fill(200));
      const ready = await a.request({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(200);
      expect(json(ready)).toMatchObject({ database: 'ok', redis: 'unavailable' });

      await proxy.restore();
      await waitReady();
      // The client reconnects first; each app's breaker closes once its own PING answers (src/db/redis.ts), a round trip later.
      await waitBreakersClosed();
      expect(json(await a.request({ method: 'GET', url: '/readyz' })).redis).toBe('ok');
      expect(json(await b.request({ method: 'GET', url: '/readyz' })).redis).toBe('ok');
      const ws2 = await newWorkspace(a);
      const after = await Promise.all(
        Array.from({ length: limit + 4 }, (_, i) =>
          (i % 2 ? a : b).request({ method: 'GET', url: '/v1/resources', key: ws2.live }),
        ),
      );
      expect(after.filter((r) => r.statusCode === 200).length).toBe(limit);
    });
  },
);
