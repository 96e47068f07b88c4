import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf } from '../helpers/audit.js';
import { createResource } from '../helpers/auth-matrix.js';
import { databaseUrlOf, runWsvc } from '../helpers/processes.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — the `wsvc` commands read and write the suite's database in child processes
// Tier: full — 8 `wsvc` child processes, over a second of CPU each to start
// docs/operations.md#audit-log: `wsvc keys create|revoke` record key.created and key.revoked as the system actor
// `cli` (no request id, address or user agent); `wsvc audit list|export|verify` read the log; verify exits 1
// naming the first entry edited by SQL.
let t: TestApp;
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let databaseUrl: string;
beforeAll(async () => {
  storage = await openTestStorage();
  t = await startTestApp({ storage });
  databaseUrl = databaseUrlOf(storage);
});
afterAll(async () => {
  await t.close();
  await storage.close();
});

const wsvc = (...args: string[]) => runWsvc(databaseUrl, args);

describe('wsvc keys and wsvc audit', { timeout: 240_000 }, () => {
  it('records CLI key changes as the system actor cli, lists, exports and verifies the log', async () => {
    const ws = await newWorkspace(t, 'CLI audit');
    await createResource(t, ws.live);

    const created = await wsvc('keys', 'create', '--user', ws.adminId, '--env', 'live', '--name', 'deploy', '--json');
    expect(created.code, created.stderr).toBe(0);
    const key = JSON.parse(created.stdout).key;
    const revoked = await wsvc('keys', 'revoke', key.id, '--json');
    expect(revoked.code, revoked.stderr).toBe(0);
    const entries = await entriesOf(t, ws.id);
    expect(entries.slice(1).map((e) => [e.action, e.actor, e.target, e.env, e.request_id, e.ip, e.user_agent])).toEqual(
      [
        [
          'key.created',
          { type: 'system', id: 'cli', name: 'cli' },
          { type: 'key', id: key.id },
          'live',
          null,
          null,
          null,
        ],
        [
          'key.revoked',
          { type: 'system', id: 'cli', name: 'cli' },
          { type: 'key', id: key.id },
          'live',
          null,
          null,
          null,
        ],
      ],
    );
    expect(entries[1]?.changes).toMatchObject({ name: { before: null, after: 'deploy' } });
    expect(JSON.stringify(entries)).not.toContain(key.key);

    const list = await wsvc('audit', 'list', '--workspace', ws.id, '--action', 'key.', '--json');
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).entries.map((e: { seq: number; action: string }) => [e.seq, e.action])).toEqual([
      [4, 'key.revoked'],
      [3, 'key.created'],
    ]);
    const text = await wsvc('audit', 'list', '--workspace', ws.id);
    expect(text.stdout.split('\n')[0]).toMatch(/^SEQ\s+TIME\s+ACTOR\s+ACTION\s+TARGET\s+ENV$/);
    expect(text.stdout).toMatch(/4\s+\S+\s+system:cli \(cli\)\s+key\.revoked\s+key:key_/);

    const exported = await wsvc('audit', 'export', '--workspace', ws.id);
    expect(exported.code, exported.stderr).toBe(0);
    const lines = exported.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // The workspace's own creation first (seq 1), then the changes made in it.
    expect(lines.map((e: { seq: number; action: string }) => [e.seq, e.action])).toEqual([
      [1, 'workspace.created'],
      [2, 'resource.created'],
      [3, 'key.created'],
      [4, 'key.revoked'],
    ]);
    expect(lines[1]).toEqual(entries[0]);

    const ok = await wsvc('audit', 'verify');
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^\d+ entr(y|ies) verified in \d+ workspaces?\n$/);

    await t.storage.db
      .updateTable('audit_entries')
      .set({ changes: JSON.stringify({ name: { before: null, after: 'innocent' } }) })
      .where('id', '=', entries[1]?.id as string)
      .execute();
    const bad = await wsvc('audit', 'verify');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(`workspace ${ws.id}: entry ${entries[1]?.id} (seq 3) was edited or reordered`);
    expect(bad.stdout).toMatch(/verification failed/);
  });
});
