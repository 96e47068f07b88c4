import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anonymousActor, systemActor } from '../../src/kernel/principal.js';
import { entryHash } from '../../src/modules/audit/audit-chain.js';
import { newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';

// Backends: both — the head row's lock orders concurrent writers on PostgreSQL; the chain is read back by SQL
// Tier: quick
// docs/api.md#audit-log: the write runner writes what a change records last in its transaction, and the
// sequencer numbers it right after the commit, 1, 2, 3… per workspace without gaps and chained by hash; verify names the first entry edited, removed or
// reordered; a change that fails records nothing; the purge keeps the chain's anchor.

let now = Date.parse('2026-11-01T00:00:00.000Z');
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ clock: { now: () => now } });
});
afterAll(() => t.close());

const cli = systemActor('cli');

async function record(workspaceId: string, n = 1, targetId = 'res_x') {
  await t.services.uow.as(cli).run(async ({ audit }) => {
    for (let i = 0; i < n; i++) {
      audit.record({
        action: 'resource.updated',
        target: { type: 'resource', id: targetId },
        env: 'live',
        workspaceId,
        changes: { name: { before: `a${i}`, after: `b${i}` } },
      });
    }
  });
}

function rowsOf(workspaceId: string) {
  return t.storage.db
    .selectFrom('audit_entries')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('seq')
    .execute();
}

describe('appending', () => {
  it('numbers entries 1, 2, 3… per workspace and chains each to the previous hash', async () => {
    const ws = await newWorkspace(t);
    await record(ws.id, 2);
    await record(ws.id, 1);
    const rows = await rowsOf(ws.id);
    // The workspace's own creation is its first entry.
    expect(rows.map((r) => [Number(r.seq), r.action])).toEqual([
      [1, 'workspace.created'],
      [2, 'resource.updated'],
      [3, 'resource.updated'],
      [4, 'resource.updated'],
    ]);
    let prev = '';
    for (const r of rows) {
      expect(r.hash).toBe(entryHash(prev, r));
      prev = r.hash;
    }
    expect(rows[0]).toMatchObject({
      actor_type: 'system',
      actor_id: 'cli',
      actor_name: 'cli',
      request_id: null,
      ip: null,
    });
    const [check] = await t.services.audit.verify(ws.id);
    expect(check).toEqual({ workspaceId: ws.id, ok: true, entries: 4 });
  });

  it('a change that fails after recording leaves no entry and no gap', async () => {
    const ws = await newWorkspace(t);
    await record(ws.id);
    await expect(
      t.services.uow.as(cli).run(async ({ audit }) => {
        audit.record({
          action: 'resource.deleted',
          target: { type: 'resource', id: 'res_y' },
          env: 'live',
          workspaceId: ws.id,
        });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    await record(ws.id);
    expect((await rowsOf(ws.id)).map((r) => [Number(r.seq), r.action])).toEqual([
      [1, 'workspace.created'],
      [2, 'resource.updated'],
      [3, 'resource.updated'],
    ]);
  });

  it('refuses an entry by someone signing in that names no user, and commits nothing', async () => {
    const ws = await newWorkspace(t);
    await expect(
      t.services.uow.as(anonymousActor('sign-in')).run(async ({ audit }) => {
        audit.record({
          action: 'session.sign_in_failed',
          target: { type: 'user', id: ws.adminId },
          env: null,
          workspaceId: ws.id,
        });
      }),
    ).rejects.toThrow(/must name the user/);
    expect((await rowsOf(ws.id)).map((r) => r.action)).toEqual(['workspace.created']);
  });

  it('keeps seq gap-free under concurrent writers', async () => {
    const ws = await newWorkspace(t);
    await Promise.all(Array.from({ length: 24 }, (_, i) => record(ws.id, 1 + (i % 2))));
    const seqs = (await rowsOf(ws.id)).map((r) => Number(r.seq));
    expect(seqs).toEqual(Array.from({ length: 37 }, (_, i) => i + 1));
    expect((await t.services.audit.verify(ws.id))[0]?.ok).toBe(true);
  });
});

describe('numbering after the commit', () => {
  it('numbers an entry a crash left pending (committed, never numbered) at the next read of the log', async () => {
    const ws = await newWorkspace(t);
    await record(ws.id, 1);
    // What a process killed between a change's commit and the numbering of its entry leaves behind.
    await t.storage.db
      .insertInto('audit_pending')
      .values({
        id: 'aud_left_pending',
        workspace_id: ws.id,
        pos: 0,
        time: new Date(now).toISOString(),
        actor_type: 'system',
        actor_id: 'cli',
        actor_name: 'cli',
        actor_user_id: null,
        action: 'resource.updated',
        target_type: 'resource',
        target_id: 'res_left',
        env: 'live',
        changes: '{}',
        request_id: null,
        ip: null,
        user_agent: null,
      })
      .execute();
    expect((await rowsOf(ws.id)).map((r) => Number(r.seq))).toEqual([1, 2]);
    const page = await t.services.audit.page(ws.id, undefined, {});
    expect(page.items.map((e) => [e.seq, e.id])).toEqual([
      [3, 'aud_left_pending'],
      [2, expect.stringMatching(/^aud_/)],
      [1, expect.stringMatching(/^aud_/)],
    ]);
    expect(await t.storage.db.selectFrom('audit_pending').select('id').execute()).toEqual([]);
    expect(await t.services.audit.verify(ws.id)).toEqual([{ workspaceId: ws.id, ok: true, entries: 3 }]);
  });

  it('answers a change once its entry is numbered: the log read right after holds it', async () => {
    const ws = await newWorkspace(t);
    await Promise.all(Array.from({ length: 20 }, () => record(ws.id, 1)));
    expect((await rowsOf(ws.id)).map((r) => Number(r.seq))).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    expect(await t.storage.db.selectFrom('audit_pending').select('id').execute()).toEqual([]);
  });
});

describe('verify', () => {
  async function chainOf5() {
    const ws = await newWorkspace(t);
    for (let i = 0; i < 5; i++) await record(ws.id, 1, `res_${i}`);
    return { ws, rows: await rowsOf(ws.id) };
  }

  it('names the entry whose changes were edited by SQL', async () => {
    const { ws, rows } = await chainOf5();
    const victim = rows[2] as (typeof rows)[number];
    await t.storage.db
      .updateTable('audit_entries')
      .set({ changes: JSON.stringify({ name: { before: 'x', after: 'y' } }) })
      .where('id', '=', victim.id)
      .execute();
    const [check] = await t.services.audit.verify(ws.id);
    expect(check).toMatchObject({ ok: false, id: victim.id, seq: 3, entries: 2 });
  });

  it('names the gap a deleted middle entry leaves', async () => {
    const { ws, rows } = await chainOf5();
    await t.storage.db
      .deleteFrom('audit_entries')
      .where('id', '=', (rows[2] as (typeof rows)[number]).id)
      .execute();
    const [check] = await t.services.audit.verify(ws.id);
    expect(check).toMatchObject({ ok: false, id: (rows[3] as (typeof rows)[number]).id, seq: 4 });
    expect(check?.ok === false && check.problem).toMatch(/seq 3 is missing/);
  });

  it('names the first of two entries whose seq were swapped', async () => {
    const { ws, rows } = await chainOf5();
    const [a, b] = [rows[1] as (typeof rows)[number], rows[3] as (typeof rows)[number]];
    // Through a free number, as the unique (workspace, seq) constraint requires.
    await t.storage.db.updateTable('audit_entries').set({ seq: 1000 }).where('id', '=', a.id).execute();
    await t.storage.db.updateTable('audit_entries').set({ seq: 2 }).where('id', '=', b.id).execute();
    await t.storage.db.updateTable('audit_entries').set({ seq: 4 }).where('id', '=', a.id).execute();
    const [check] = await t.services.audit.verify(ws.id);
    expect(check).toMatchObject({ ok: false, id: b.id, seq: 2 });
  });

  it('notices the newest entry removed (the head is further on)', async () => {
    const { ws, rows } = await chainOf5();
    await t.storage.db
      .deleteFrom('audit_entries')
      .where('id', '=', (rows[5] as (typeof rows)[number]).id)
      .execute();
    const [check] = await t.services.audit.verify(ws.id);
    expect(check).toMatchObject({ ok: false, seq: 6 });
  });
});

describe('retention', () => {
  it('deletes entries older than AUDIT_RETENTION_DAYS, keeps one exactly that old, anchors the chain, records audit.purged', async () => {
    const ws = await newWorkspace(t); // workspace.created, as old as res_old
    const start = now;
    await record(ws.id, 1, 'res_old'); // at start - 1 ms, once the clock moves
    now = start + 1;
    await record(ws.id, 1, 'res_limit'); // exactly at the limit
    now = start + 2;
    await record(ws.id, 1, 'res_new');
    const days = t.config.AUDIT_RETENTION_DAYS;
    expect(days).toBe(400);
    now = start + 1 + days * 86_400_000;
    const job = t.services.jobs.find((j) => j.id === 'purge-audit');
    expect(await job?.run()).toBeGreaterThanOrEqual(1);
    const rows = await rowsOf(ws.id);
    expect(rows.map((r) => [Number(r.seq), r.target_id])).toEqual([
      [3, 'res_limit'],
      [4, 'res_new'],
      [5, ws.id],
    ]);
    expect(rows[2]).toMatchObject({
      action: 'audit.purged',
      actor_type: 'system',
      actor_id: 'scheduler:purge-audit',
      env: null,
    });
    expect(JSON.parse((rows[2] as (typeof rows)[number]).changes)).toEqual({
      entries_purged: { before: null, after: 2 },
      anchor_seq: { before: 0, after: 2 },
    });
    const head = await t.storage.db
      .selectFrom('audit_heads')
      .selectAll()
      .where('workspace_id', '=', ws.id)
      .executeTakeFirstOrThrow();
    expect(Number(head.anchor_seq)).toBe(2);
    expect((await t.services.audit.verify(ws.id))[0]).toEqual({ workspaceId: ws.id, ok: true, entries: 3 });
    // Nothing more to delete: no second audit.purged entry.
    expect((await rowsOf(ws.id)).length).toBe(3);
    await job?.run();
    expect((await rowsOf(ws.id)).length).toBe(3);
    // The anchor is checked too: a forged anchor breaks the first entry after it.
    await sql`update audit_heads set anchor_hash = ${'0'.repeat(64)} where workspace_id = ${ws.id}`.execute(
      t.storage.db,
    );
    expect((await t.services.audit.verify(ws.id))[0]).toMatchObject({ ok: false, seq: 3 });
  });
});
