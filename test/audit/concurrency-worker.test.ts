import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { storedEntries } from '../helpers/audit-entries.js';
import { databaseUrlOf, runWsvc, startWsvc, stopProcess, type WsvcProcess } from '../helpers/processes.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — the head row orders a workspace's writers across processes: its lock on PostgreSQL, the file's write lock on SQLite
// Tier: full — three `wsvc` child processes
// docs/api.md#audit-log, "seq numbers a workspace's entries 1, 2, 3… without gaps, whatever number of processes
// write": two `wsvc serve --api-only` processes take POST /v1/resources from clients that keep sending while a
// `wsvc worker` process writes entries of the same workspace. The worker's delivery engine records nothing (its
// cycles write delivery outcomes and endpoint health, not audited changes); its `billing-invoices` job, which runs
// when the worker starts, records one `invoice.finalized` per invoice, and a workspace started years ago (the
// injected clock) has one invoice due per month since: the job catches up, one transaction per invoice, while the
// creates go on. The entries are numbered 1..N without a gap or a duplicate, the job's are interleaved with the
// creates', and `wsvc audit verify` passes.

// When the workspace started (the injected clock), so how many invoices the job finds due: 70 since 2021. On
// PostgreSQL the writers run at once, ordered only at the head row: 216 to 297 creates were numbered between the
// job's first and last entry (five runs, 2026-11-27 and 2026-11-30). On SQLite they take turns on the file's write
// lock, and a process waiting for it sleeps between tries (SQLite's busy handler): a job's change leaves the lock
// free afterwards (Dialect.yieldToOtherWriters, called by the unit of work), and 798 to 1,720 creates got in (five
// runs, 2026-11-30); without that, 2 to 17 (three runs), and none in some CI runs.
const STARTED = Date.parse('2021-01-15T12:00:00.000Z');
const CLIENTS_PER_SERVER = 2;

let storage: Awaited<ReturnType<typeof openTestStorage>>;
const processes: WsvcProcess[] = [];
beforeAll(async () => {
  storage = await openTestStorage();
});
afterAll(async () => {
  await Promise.all(processes.map((p) => stopProcess(p.child, 'SIGKILL')));
  await storage.close();
});

describe('audit seq with the worker writing beside two API processes', () => {
  it('is gap-free and verifies', { timeout: 120_000 }, async () => {
    const config = loadConfig(
      {},
      {
        SECRETS_KEY: process.env.SECRETS_KEY || undefined,
        DATABASE_URL: storage.url,
        LOG_LEVEL: 'silent',
        PLAN_LIMITS: 'off',
      },
    );
    const services = createServices({ storage, clock: { now: () => STARTED }, config });
    const ws = await services.workspaces.create(asCli(services), {
      name: 'Catching up',
      adminEmail: 'catch-up@example.test',
    });
    const wsId = ws.workspace.id;
    const databaseUrl = databaseUrlOf(storage);
    // The workspace is created years back, its workspace.created entry with it: the longest retention keeps the
    // worker's purge job from removing that entry while the test counts.
    const env = {
      DATABASE_URL: databaseUrl,
      PORT: '0',
      REDIS_URL: '',
      PLAN_LIMITS: 'off',
      AUDIT_RETENTION_DAYS: '36500',
    };
    const servers = await Promise.all([1, 2].map(() => startWsvc(['serve', '--api-only'], env)));
    processes.push(...servers);

    // Clients that keep creating until the worker's job has finished.
    let done = false;
    const statuses: number[] = [];
    const client = async (url: string, c: number) => {
      for (let i = 0; !done; i++) {
        const res = await fetch(`${url}/v1/resources`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ws.keys.live.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `c${c}-${i}`, type: 'standard' }),
        });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
    };
    const clients = servers.flatMap((s, n) =>
      Array.from({ length: CLIENTS_PER_SERVER }, (_, c) => client(s.url, n * CLIENTS_PER_SERVER + c)),
    );
    // Some creates committed before the worker starts: its job begins among them.
    await expect.poll(() => statuses.length, { timeout: 30_000 }).toBeGreaterThan(20);
    const worker = await startWsvc(['worker'], env);
    processes.push(worker);
    const finished = /"job":"billing-invoices","count":(\d+)/;
    await expect.poll(() => finished.test(worker.output()), { timeout: 60_000 }).toBe(true);
    const invoices = Number(finished.exec(worker.output())?.[1]);
    done = true;
    await Promise.all(clients);
    await Promise.all(processes.map((p) => stopProcess(p.child)));

    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    // One invoice a month since STARTED: dozens, each its own transaction.
    expect(invoices).toBeGreaterThan(60);
    const entries = await storedEntries({ storage }, wsId);
    expect(entries.map((e) => e.seq)).toEqual(Array.from({ length: entries.length }, (_, i) => i + 1));
    const byJob = entries.filter((e) => e.action === 'invoice.finalized');
    expect(byJob).toHaveLength(invoices);
    expect(new Set(byJob.map((e) => e.actor_id))).toEqual(new Set(['scheduler:billing-invoices']));
    expect(entries.filter((e) => e.action === 'resource.created')).toHaveLength(statuses.length);
    // The workspace's own first entry, then the creates and the invoices.
    expect(entries[0]?.action).toBe('workspace.created');
    expect(entries).toHaveLength(1 + statuses.length + invoices);
    // The job's entries are not one block: creates from the API processes were numbered between them, at least
    // as many as the job's invoices (see STARTED: on SQLite only because the job leaves the write lock free).
    const first = byJob[0]?.seq ?? 0;
    const last = byJob.at(-1)?.seq ?? 0;
    const between = entries.filter((e) => e.action === 'resource.created' && e.seq > first && e.seq < last);
    expect(between.length, `creates numbered between the job's entries ${first}..${last}`).toBeGreaterThanOrEqual(
      invoices,
    );
    const head = await storage.db
      .selectFrom('audit_heads')
      .select('seq')
      .where('workspace_id', '=', wsId)
      .executeTakeFirstOrThrow();
    expect(Number(head.seq)).toBe(entries.length);

    const verified = await runWsvc(databaseUrl, ['audit', 'verify', '--workspace', wsId]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toContain(`${entries.length} entries verified in 1 workspace`);
  });
});
