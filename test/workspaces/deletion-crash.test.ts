// Backends: both — the deletion's batches commit one by one on each database, and a killed process must leave them so
// Tier: full — kills a real `wsvc workspaces delete --now` child process with SIGKILL midway
// docs/data-lifecycle.md#deleting-a-workspace: each batch of the deletion commits on its own; a process killed midway
// keeps what it deleted, and the next run (the job, here in another process) finishes without touching another workspace.
import { spawn } from 'node:child_process';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { databaseUrlOf } from '../helpers/processes.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const EVENTS = 6000;

/** Many events of a workspace, written straight to the table: enough rows for a dozen batches. */
async function seedEvents(workspaceId: string, count: number): Promise<void> {
  const at = new Date().toISOString();
  for (let i = 0; i < count; i += 500) {
    const rows = Array.from({ length: Math.min(500, count - i) }, (_, j) => ({
      id: `evt_seed${workspaceId.slice(-6)}${String(i + j).padStart(6, '0')}`,
      workspace_id: workspaceId,
      env: 'live' as const,
      type: 'resource.created' as const,
      resource_id: null,
      payload: '{}',
      created_at: at,
    }));
    await t.storage.db.insertInto('events').values(rows).execute();
  }
}

async function count(table: 'events' | 'users' | 'api_keys' | 'workspaces', workspaceId: string): Promise<number> {
  const col = table === 'workspaces' ? 'id' : 'workspace_id';
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}
    where ${sql.ref(col)} = ${workspaceId}`.execute(t.storage.db);
  return Number(rows[0]?.n ?? 0);
}

describe('a workspace deletion killed midway (docs/data-lifecycle.md#deleting-a-workspace)', () => {
  it('keeps what it committed, and the job finishes it; the other workspace is untouched', async () => {
    const doomed = await newWorkspace(t, 'Doomed');
    const other = await newWorkspace(t, 'Kept');
    await seedEvents(doomed.id, EVENTS);
    await seedEvents(other.id, 700);
    const before = await count('events', doomed.id);
    const otherEvents = await count('events', other.id);
    const child = spawn(
      process.execPath,
      ['bin/wsvc.js', 'workspaces', 'delete', doomed.id, '--confirm', 'Doomed', '--now'],
      {
        env: {
          ...process.env,
          DATABASE_URL: databaseUrlOf(t.storage as typeof t.storage & { url: string; schema?: string }),
          LOG_LEVEL: 'silent',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // SIGKILL as soon as the first batch of events is committed (its line is printed after the commit).
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        out += d;
        if (/deleted 500 rows of events/.test(out)) {
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.once('exit', () => reject(new Error(`wsvc exited before a batch: ${out}${err}`)));
    });
    await exited;
    expect(child.signalCode).toBe('SIGKILL');

    // Midway: some events gone, the workspace and its members still there, the tombstone written first.
    const left = await count('events', doomed.id);
    // (+1: the workspace.deletion_scheduled event, recorded with the scheduling)
    expect(left).toBeLessThanOrEqual(before + 1 - 500);
    expect(left).toBeGreaterThan(0);
    expect(await count('workspaces', doomed.id)).toBe(1);
    expect(await count('users', doomed.id)).toBe(1);
    expect(await t.services.workspaceDeletion.tombstone(doomed.id)).toBeDefined();
    // Its keys are already refused: the deletion was scheduled before any row went.
    const res = await t.request({ method: 'GET', url: '/v1/users/me', key: doomed.live });
    expect(res.statusCode).toBe(401);

    // The job, in this process, goes on from there.
    const job = t.services.uow.as(systemActor('scheduler:workspace-deletions'));
    expect(await t.services.workspaceDeletion.runDue(job)).toBeGreaterThanOrEqual(left);
    for (const table of ['events', 'users', 'api_keys', 'workspaces'] as const) {
      expect(await count(table, doomed.id)).toBe(0);
    }
    expect(await count('events', other.id)).toBe(otherEvents);
    expect(await count('api_keys', other.id)).toBe(2);
    expect((await t.request({ method: 'GET', url: '/v1/users/me', key: other.live })).statusCode).toBe(200);
    // A second run finds nothing to do.
    expect(await t.services.workspaceDeletion.runDue(job)).toBe(0);
  });
});
