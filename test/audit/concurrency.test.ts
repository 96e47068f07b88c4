import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { databaseUrlOf, startApi, stopProcess } from '../helpers/processes.js';
import { openTestStorage, testBackend } from '../helpers/storage.js';

// Backends: both — the head row's lock orders the writers of a workspace across processes on PostgreSQL
// Tier: full — real `wsvc serve` processes
// docs/api.md#audit-log: many concurrent POSTs of one workspace, through two server processes sharing the
// database on PostgreSQL (one process on SQLite, whose writes run one at a time), number their entries
// 1, 2, 3… without a gap or a duplicate, and the chain verifies.
describe('audit seq under concurrent writers', () => {
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

  it('is gap-free and verifies after concurrent creates and archives', { timeout: 180_000 }, async () => {
    const ws = await services.workspaces.create(asCli(services), { name: 'race', adminEmail: 'race@example.test' });
    const key = ws.keys.live.key;
    const env = { DATABASE_URL: databaseUrlOf(storage), PORT: '0', REDIS_URL: '', PLAN_LIMITS: 'off' };
    const servers = await Promise.all(
      Array.from({ length: testBackend() === 'postgres' ? 2 : 1 }, () => startApi(env)),
    );
    try {
      const post = (url: string, path: string, body?: unknown) =>
        fetch(`${url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as { data: { id: string } } }));
      const urls = servers.map((s) => s.url);
      const at = (i: number) => urls[i % urls.length] as string;
      const created = await Promise.all(
        Array.from({ length: 60 }, (_, i) => post(at(i), '/v1/resources', { name: `r${i}`, type: 'standard' })),
      );
      expect(created.map((r) => r.status)).toEqual(Array(60).fill(201));
      // Archives of the same resources from both processes at once: each resource archived once.
      const archived = await Promise.all(
        created.flatMap((r, i) => [
          post(at(i), `/v1/resources/${r.body.data.id}/archive`),
          post(at(i + 1), `/v1/resources/${r.body.data.id}/archive`),
        ]),
      );
      expect(archived.every((r) => r.status === 200)).toBe(true);
      const rows = await storage.db
        .selectFrom('audit_entries')
        .select(['seq', 'action'])
        .where('workspace_id', '=', ws.workspace.id)
        .orderBy('seq')
        .execute();
      // The workspace's creation (seq 1), then the 120 changes.
      expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 121 }, (_, i) => i + 1));
      expect(rows.filter((r) => r.action === 'resource.archived')).toHaveLength(60);
      expect(await services.audit.verify(ws.workspace.id)).toEqual([
        { workspaceId: ws.workspace.id, ok: true, entries: 121 },
      ]);
    } finally {
      await Promise.all(servers.map((s) => stopProcess(s.child)));
    }
  });
});
