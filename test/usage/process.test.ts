import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { databaseUrlOf, startApi, stopProcess } from '../helpers/processes.js';
import { eventually } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — usage flushed from real processes into the database, exactly
// Tier: full — SIGTERM and SIGKILL of real server processes
// docs/usage.md#no-write-on-the-request-path: real `wsvc serve --api-only` processes on one database.
// SIGTERM flushes what was counted; SIGKILL loses at most what came since the last flush.
describe('usage metering across real processes', () => {
  let storage: Awaited<ReturnType<typeof openTestStorage>>;
  let services: ReturnType<typeof createServices>;
  beforeAll(async () => {
    storage = await openTestStorage();
    const config = loadConfig(
      {},
      {
        SECRETS_KEY: process.env.SECRETS_KEY || undefined,
        DATABASE_URL: storage.url,
        LOG_LEVEL: 'silent',
        PLAN_LIMITS: 'off',
      },
    );
    services = createServices({ storage, clock: systemClock, config });
  });
  afterAll(() => storage?.close());

  const env = (flushMs: number) => ({
    DATABASE_URL: databaseUrlOf(storage),
    PORT: '0',
    USAGE_FLUSH_MS: String(flushMs),
    REDIS_URL: '',
  });
  const counts = async (workspaceId: string) => {
    const rows = await storage.db
      .selectFrom('usage_counts')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .execute();
    const out: Record<string, number> = {};
    for (const r of rows) out[r.status] = (out[r.status] ?? 0) + Number(r.count);
    return out;
  };
  const call = (url: string, key: string, path: string) =>
    fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);

  it('two processes stopped with SIGTERM have written every request, exactly', async () => {
    const ws = await services.workspaces.create(asCli(services), { name: 'procs', adminEmail: 'procs@example.test' });
    const key = ws.keys.live.key;
    // A flush interval longer than the test: only the shutdown flush writes.
    const [a, b] = await Promise.all([startApi(env(600_000)), startApi(env(600_000))]);
    try {
      const sent = await Promise.all([
        ...Array.from({ length: 6 }, () => call(a.url, key, '/v1/resources')),
        ...Array.from({ length: 4 }, () => call(b.url, key, '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R')),
        call(b.url, key, '/v1/resources'),
      ]);
      expect(sent.sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 404, 404, 404, 404]);
      expect(await counts(ws.workspace.id)).toEqual({});
    } finally {
      await Promise.all([stopProcess(a.child, 'SIGTERM'), stopProcess(b.child, 'SIGTERM')]);
    }
    expect(await counts(ws.workspace.id)).toEqual({ 200: 7, 404: 4 });
  }, 60_000);

  it('a process killed with SIGKILL loses at most what came since its last flush', async () => {
    const ws = await services.workspaces.create(asCli(services), { name: 'killed', adminEmail: 'killed@example.test' });
    const key = ws.keys.live.key;
    const c = await startApi(env(200));
    try {
      for (let i = 0; i < 3; i++) expect(await call(c.url, key, '/v1/resources')).toBe(200);
      await eventually(async () => (await counts(ws.workspace.id))[200] === 3, 10_000);
      for (let i = 0; i < 2; i++) expect(await call(c.url, key, '/v1/resources')).toBe(200);
    } finally {
      await stopProcess(c.child, 'SIGKILL');
    }
    const n = (await counts(ws.workspace.id))[200] ?? 0;
    expect(n).toBeGreaterThanOrEqual(3);
    expect(n).toBeLessThanOrEqual(5);
  }, 60_000);
});
