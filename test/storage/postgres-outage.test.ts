import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../../src/db/database.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { type CuttableProxy, hostPort, startProxy, viaPort } from '../helpers/proxy.js';
import { startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';
import { testWorker } from '../helpers/worker.js';

// Backends: postgres — a lost PostgreSQL connection, statement timeout and pool size
// Tier: full — PostgreSQL/Redis only, and `npm test` runs on SQLite
// docs/operations.md PostgreSQL hardening, and no event lost or repeated by the delivery worker across an outage.
// Only meaningful on PostgreSQL (the sqlite project skips it).
const pgUrl = process.env.TEST_DATABASE_URL;

describe.skipIf(!pgUrl)('PostgreSQL: lost connection, statement timeout, pool size (docs/operations.md)', () => {
  let base: Awaited<ReturnType<typeof openTestStorage>>;
  let proxy: CuttableProxy;
  let t: TestApp;
  beforeAll(async () => {
    base = await openTestStorage();
    proxy = await startProxy(hostPort(pgUrl as string));
    const url = viaPort(pgUrl as string, proxy.port);
    const storage = openStorage({ url, poolSize: 3, statementTimeoutMs: 5000, schema: base.schema });
    t = await startTestApp({ storage: { ...storage, url }, config: { WEBHOOK_ALLOW_INSECURE_URLS: true } });
  });
  afterAll(async () => {
    await t.close();
    await t.storage.close();
    await proxy.close();
    await base.close();
  });

  it('answers 503 with the error body while the database is gone, and recovers by itself', async () => {
    const ws = await newWorkspace(t);
    const ok = await t.request({ method: 'GET', url: '/v1/resources', key: ws.live });
    expect(ok.statusCode).toBe(200);
    expect(json(await t.request({ method: 'GET', url: '/readyz' }))).toMatchObject({ database: 'ok' });

    await proxy.cut();
    const down = await t.request({ method: 'GET', url: '/v1/resources', key: ws.live });
    expect(down.statusCode).toBe(503);
    expect(json(down).error).toMatchObject({ code: 'service_unavailable', request_id: expect.any(String) });
    expect(down.headers['retry-after']).toBe('1');
    const post = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name: 'x', type: 'standard' },
    });
    expect(post.statusCode).toBe(503);
    const ready = await t.request({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(json(ready)).toMatchObject({ error: { code: 'service_unavailable' }, database: 'unavailable' });

    await proxy.restore();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await t.request({ method: 'GET', url: '/v1/resources', key: ws.live })).statusCode;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
    expect((await t.request({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    // Nothing was written while the database was away.
    expect(json(await t.request({ method: 'GET', url: '/v1/resources', key: ws.live })).data).toEqual([]);
  });

  it('loses and repeats no event across the outage: the worker delivers each committed one once (docs/api.md#platform-events)', async () => {
    const rx = await startReceiver();
    const worker = testWorker(t, { listen: false });
    const drain = async () => {
      while ((await worker.runOnce()) > 0) {}
    };
    try {
      const ws = await newWorkspace(t);
      const hook = await t.request({
        method: 'POST',
        url: '/v1/webhooks',
        key: ws.live,
        body: { url: rx.url('/outage'), events: ['*'] },
      });
      expect(hook.statusCode, hook.body).toBe(201);
      // Committed before the outage: a platform event and a resource event, not yet delivered.
      const key = await t.request({
        method: 'POST',
        url: '/v1/keys',
        key: ws.live,
        body: { name: 'before', env: 'live' },
      });
      expect(key.statusCode, key.body).toBe(201);
      const res = await t.request({
        method: 'POST',
        url: '/v1/resources',
        key: ws.live,
        body: { name: 'before', type: 'standard' },
      });
      expect(res.statusCode, res.body).toBe(201);

      await proxy.cut();
      // The worker's run delivers nothing without a database (it logs and waits); a write refused meanwhile emits nothing.
      expect(await worker.runOnce()).toBe(0);
      const refused = await t.request({
        method: 'POST',
        url: '/v1/keys',
        key: ws.live,
        body: { name: 'during', env: 'live' },
      });
      expect(refused.statusCode).toBe(503);
      expect(rx.to('/outage')).toEqual([]);

      await proxy.restore();
      let up = false;
      for (let i = 0; i < 50 && !up; i++) {
        up = (await t.request({ method: 'GET', url: '/readyz' })).statusCode === 200;
        if (!up) await new Promise((r) => setTimeout(r, 100));
      }
      expect(up).toBe(true);
      await drain();
      await drain();
      const got = rx.to('/outage').map((r) => JSON.parse(r.body) as { id: string; event: string; data: unknown });
      expect(got.map((e) => e.event).sort()).toEqual(['key.created', 'resource.created']);
      expect(new Set(got.map((e) => e.id)).size).toBe(2);
      expect(got.find((e) => e.event === 'key.created')?.data).toMatchObject({ key: { name: 'before' } });
    } finally {
      await worker.stop(1000);
      await rx.close();
    }
  });

  it('cancels a statement after DATABASE_STATEMENT_TIMEOUT_MS and treats it as unavailable (503)', async () => {
    const s = openStorage({ url: pgUrl as string, poolSize: 1, statementTimeoutMs: 100 });
    try {
      const err = await sql`select pg_sleep(2)`.execute(s.db).then(
        () => null,
        (e: unknown) => e as { code?: string },
      );
      expect(err?.code).toBe('57014');
      expect(s.dialect.isUnavailable(err)).toBe(true);
      const shown = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(s.db);
      expect(shown.rows[0]?.statement_timeout).toBe('100ms');
    } finally {
      await s.close();
    }
  });

  it('never opens more connections than DATABASE_POOL_SIZE', async () => {
    const s = openStorage({ url: pgUrl as string, poolSize: 2 });
    try {
      const pids = await Promise.all(
        Array.from({ length: 6 }, () =>
          sql<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(0.05)`
            .execute(s.db)
            .then((r) => r.rows[0]?.pid),
        ),
      );
      expect(new Set(pids).size).toBeLessThanOrEqual(2);
      expect(new Set(pids).size).toBeGreaterThanOrEqual(1);
    } finally {
      await s.close();
    }
  });
});
