import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { storedEntries } from '../helpers/audit-entries.js';
import {
  databaseUrlOf,
  pauseBeforeCommitEnv,
  runWsvc,
  startWsvc,
  stopProcess,
  type WsvcProcess,
} from '../helpers/processes.js';
import { openTestStorage, testBackend } from '../helpers/storage.js';

// Backends: both — what a killed write leaves behind is each database's rollback of an uncommitted transaction
// Tier: full — kill -9 of a `wsvc serve` child process
// docs/api.md#audit-log, "no change without its entry, no entry without its change": a real `wsvc serve` is killed
// with SIGKILL while a POST /v1/resources is inside its write transaction, after the resource and its audit entry
// were written and before the COMMIT (held there by test/helpers/pause-before-commit.mjs, which reports the entry it
// saw in the transaction). Neither the resource nor its entry is in the database afterwards, the workspace's head
// `seq` is where the last acknowledged write left it, the acknowledged write before the kill has its entry, the
// chain verifies, and the next write after a restart takes the next `seq`.

const PAUSED = 'paused before commit';

let storage: Awaited<ReturnType<typeof openTestStorage>>;
let server: WsvcProcess | undefined;
beforeAll(async () => {
  storage = await openTestStorage();
});
afterAll(async () => {
  if (server) await stopProcess(server.child, 'SIGKILL');
  await storage.close();
});

describe('kill -9 between the change and its commit', () => {
  it('leaves neither the resource nor its audit entry; the chain verifies and goes on', {
    timeout: 120_000,
  }, async () => {
    const config = loadConfig(
      {},
      {
        SECRETS_KEY: process.env.SECRETS_KEY || undefined,
        DATABASE_URL: storage.url,
        LOG_LEVEL: 'silent',
        PLAN_LIMITS: 'off',
      },
    );
    const services = createServices({ storage, clock: systemClock, config });
    const ws = await services.workspaces.create(asCli(services), {
      name: 'Crash audit',
      adminEmail: 'crash-audit@example.test',
    });
    const wsId = ws.workspace.id;
    const databaseUrl = databaseUrlOf(storage);
    const env = { DATABASE_URL: databaseUrl, PORT: '0', REDIS_URL: '' };
    const create = (name: string) =>
      fetch(`${server?.url}/v1/resources`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.keys.live.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name, type: 'standard' }),
      });
    const head = async () =>
      (await storage.db.selectFrom('audit_heads').select('seq').where('workspace_id', '=', wsId).executeTakeFirst())
        ?.seq;

    server = await startWsvc(['serve', '--api-only'], { ...env, ...pauseBeforeCommitEnv('never-committed') });
    const paused = server;

    // Acknowledged before the kill: 201, with its entry.
    const ack = await create('acknowledged');
    expect(ack.status).toBe(201);
    const ackId = ((await ack.json()) as { data: { id: string } }).data.id;
    const before = await storedEntries({ storage }, wsId);
    const ackEntry = before.find((e) => e.target_id === ackId);
    expect(ackEntry?.action).toBe('resource.created');
    const seq = Number(await head());
    expect(seq).toBe(ackEntry?.seq);

    // The second create stops at its COMMIT, its resource and entry written inside the transaction.
    const lost = create('never-committed').then(
      (r) => r.status,
      () => 'no answer',
    );
    await expect.poll(() => paused.output().includes(PAUSED), { timeout: 30_000 }).toBe(true);
    const line = paused
      .output()
      .split('\n')
      .find((l) => l.includes(PAUSED)) as string;
    // Written in the change's transaction: numbered there on SQLite, pending on PostgreSQL (the sequencer numbers
    // it after the commit).
    const inside = JSON.parse(line) as { resource: string; audit: { seq: number | null; action: string }[] };
    expect(inside.audit).toEqual([{ seq: testBackend() === 'postgres' ? null : seq + 1, action: 'resource.created' }]);
    await stopProcess(paused.child, 'SIGKILL');
    expect(await lost).toBe('no answer');

    // Nothing of it committed: no resource, no entry, the head where the acknowledged write left it.
    expect(
      await storage.db.selectFrom('resources').select('id').where('name', '=', 'never-committed').execute(),
    ).toEqual([]);
    expect(
      await storage.db.selectFrom('resources').select('id').where('id', 'in', [ackId, inside.resource]).execute(),
    ).toEqual([{ id: ackId }]);
    const after = await storedEntries({ storage }, wsId);
    expect(after.filter((e) => e.target_id === inside.resource)).toEqual([]);
    expect(after).toEqual(before);
    expect(await storage.db.selectFrom('audit_pending').select('id').execute()).toEqual([]);
    expect(Number(await head())).toBe(seq);
    const verified = await runWsvc(databaseUrl, ['audit', 'verify', '--workspace', wsId]);
    expect(verified.code, verified.stderr).toBe(0);

    // A restarted server's next write takes the seq the killed one never committed.
    server = await startWsvc(['serve', '--api-only'], env);
    const next = await create('after the crash');
    expect(next.status).toBe(201);
    const nextId = ((await next.json()) as { data: { id: string } }).data.id;
    const last = (await storedEntries({ storage }, wsId)).at(-1);
    expect([last?.target_id, last?.seq]).toEqual([nextId, seq + 1]);
    const again = await runWsvc(databaseUrl, ['audit', 'verify', '--workspace', wsId]);
    expect(again.code, again.stderr).toBe(0);
  });
});
