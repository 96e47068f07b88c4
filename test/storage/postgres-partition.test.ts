import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../../src/db/database.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { type CuttableProxy, hostPort, startProxy, viaPort } from '../helpers/proxy.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: postgres — a network partition between the service and PostgreSQL
// Tier: full — PostgreSQL/Redis only, and `npm test` runs on SQLite
// A partition between the service and PostgreSQL (a proxy that stops forwarding,
// connections left open) is detected by the client-side query timeout, not waited out:
// `statement_timeout` runs on the server and cannot fire when no packet gets through.
const pgUrl = process.env.TEST_DATABASE_URL;
const QUERY_TIMEOUT_MS = 1500;
// Generous for a loaded CI machine; the partition itself lasts as long as the test wants.
const MARGIN_MS = 2500;

/** Runs `fn`, giving up after `ms` (so the old code's hang fails the test instead of stalling it). */
async function timed<T>(fn: () => Promise<T>, ms = 15_000): Promise<{ value: T | 'hung'; ms: number }> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((r) => {
    timer = setTimeout(() => r('hung'), ms);
  });
  const value = await Promise.race([fn(), hung]);
  clearTimeout(timer);
  return { value, ms: Date.now() - started };
}

describe.skipIf(!pgUrl)('PostgreSQL partition: client-side timeouts and /readyz', () => {
  let base: Awaited<ReturnType<typeof openTestStorage>>;
  let proxy: CuttableProxy;
  let t: TestApp;
  beforeAll(async () => {
    base = await openTestStorage();
    proxy = await startProxy(hostPort(pgUrl as string));
    const url = viaPort(pgUrl as string, proxy.port);
    const storage = openStorage({
      url,
      poolSize: 3,
      statementTimeoutMs: 5000,
      queryTimeoutMs: QUERY_TIMEOUT_MS,
      connectTimeoutMs: QUERY_TIMEOUT_MS,
      schema: base.schema,
    });
    t = await startTestApp({ storage: { ...storage, url } });
  });
  afterAll(async () => {
    proxy.resume();
    await t.close();
    await t.storage.close();
    await proxy.close();
    await base.close();
  });

  it('answers 503 within the query timeout while packets are dropped, /readyz within 1 s, and recovers', async () => {
    const ws = await newWorkspace(t);
    // Every pooled connection open and idle, as in a running server.
    const warm = await Promise.all(
      Array.from({ length: 3 }, () => t.request({ method: 'GET', url: '/v1/resources', key: ws.live })),
    );
    expect(warm.map((r) => r.statusCode)).toEqual([200, 200, 200]);

    proxy.pause();
    // Requests in flight on the open connections, and more than the pool holds.
    const during = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        timed(() =>
          i % 2
            ? t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: 'x', type: 'standard' } })
            : t.request({ method: 'GET', url: '/v1/resources', key: ws.live }),
        ),
      ),
    );
    const ready = await timed(() => t.request({ method: 'GET', url: '/readyz' }));
    const times = during.map((d) => d.ms);
    console.log(
      `partition detected: requests answered 503 after ${Math.min(...times)}–${Math.max(...times)} ms (query timeout ${QUERY_TIMEOUT_MS} ms); /readyz in ${ready.ms} ms`,
    );
    for (const d of during) {
      expect(d.value).not.toBe('hung');
      if (d.value === 'hung') continue;
      expect(d.value.statusCode).toBe(503);
      expect(json(d.value).error).toMatchObject({ code: 'service_unavailable', request_id: expect.any(String) });
      expect(d.ms).toBeLessThan(2 * QUERY_TIMEOUT_MS + MARGIN_MS);
    }
    expect(ready.value).not.toBe('hung');
    if (ready.value === 'hung') return;
    expect(ready.ms).toBeLessThan(1000 + MARGIN_MS);
    expect(ready.value.statusCode).toBe(503);
    expect(json(ready.value)).toMatchObject({
      error: { code: 'service_unavailable', message: expect.stringContaining('did not answer') },
      database: 'not_responding',
    });

    // Detected: the breaker is open (src/db/breaker.ts). Every later request is answered 503 with
    // Retry-After at once, not after the query timeout, however long the partition lasts.
    const after: number[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await timed(() =>
        i % 4 === 3
          ? t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: 'y', type: 'standard' } })
          : t.request({ method: 'GET', url: '/v1/resources', key: ws.live }),
      );
      expect(r.value).not.toBe('hung');
      if (r.value === 'hung') continue;
      expect(r.value.statusCode).toBe(503);
      expect(r.value.headers['retry-after']).toBe('1');
      expect(json(r.value).error).toMatchObject({ code: 'service_unavailable' });
      after.push(r.ms);
    }
    after.sort((a, b) => a - b);
    const p50 = after[Math.floor(after.length / 2)] as number;
    const fast = after.filter((ms) => ms < 50).length;
    console.log(
      `after detection: ${after.length} requests answered 503, p50 ${p50} ms, max ${after.at(-1)} ms, ${fast} under 50 ms (query timeout ${QUERY_TIMEOUT_MS} ms)`,
    );
    // Behaviour, not speed: none waits for the database (each well under the query timeout).
    for (const ms of after) expect(ms).toBeLessThan(QUERY_TIMEOUT_MS);
    // Liveness is not the database's: /healthz still answers while the breaker is open.
    expect((await t.request({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);

    proxy.resume();
    let status = 0;
    const healed = Date.now();
    for (let i = 0; i < 200 && status !== 200; i++) {
      status = (await t.request({ method: 'GET', url: '/v1/resources', key: ws.live })).statusCode;
      if (status !== 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(200);
    const recoveredMs = Date.now() - healed;
    console.log(`recovered ${recoveredMs} ms after the partition ended (the breaker probes every 250 ms)`);
    expect(recoveredMs).toBeLessThan(1000 + MARGIN_MS);
    expect(json(await t.request({ method: 'GET', url: '/readyz' }))).toMatchObject({ database: 'ok' });
    // Nothing the refused POSTs sent was written (each write is one transaction).
    const list = json(await t.request({ method: 'GET', url: '/v1/resources', key: ws.live }));
    expect(list.data).toEqual([]);
  }, 60_000);
});
