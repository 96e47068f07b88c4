import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../../src/db/database.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { type CuttableProxy, hostPort, startProxy, viaPort } from '../helpers/proxy.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: postgres — a lost PostgreSQL connection, statement timeout and pool size
// Tier: full — PostgreSQL/Redis only, and `npm test` runs on SQLite
// docs/operations.md PostgreSQL hardening. Only meaningful on PostgreSQL (the sqlite project skips it).
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
    t = await startTestApp({ storage: { ...storage, url } });
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
