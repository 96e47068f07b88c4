import { existsSync } from 'node:fs';
import { join } from 'node:path';
// Backends: both — scheduling, the key check, the held deliveries and the batched deletion are all storage rules
// Tier: quick
// docs/data-lifecycle.md#deleting-a-workspace: an admin schedules a workspace's deletion by typing its name; its keys
// answer 401 workspace_deleted, its deliveries are held (the deletion events themselves are delivered), every member
// is emailed; a cancellation puts everything back; after the grace period the job deletes every row of the workspace
// except its finalized invoices, writes a tombstone, and never touches another workspace.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { systemActor } from '../../src/kernel/principal.js';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { WORKSPACE_TABLE_RULES } from '../../src/modules/workspaces/workspace-rows.js';
import { asCli, json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { databaseUrlOf, runWsvc } from '../helpers/processes.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { testWorker } from '../helpers/worker.js';

const CONFIG: Partial<Config> = {
  WEBHOOK_ALLOW_INSECURE_URLS: true,
  WEBHOOK_MAX_RETRIES: 0,
  WEBHOOK_TIMEOUT_MS: 2000,
  WORKSPACE_DELETION_GRACE_DAYS: 30,
};
const DAY = 86_400_000;
let nowMs = Date.parse('2026-03-01T09:00:00.000Z');
const clock = { now: () => nowMs };
let t: TestApp;
let rx: Receiver;
let worker: DeliveryWorker;
beforeAll(async () => {
  t = await startTestApp({ config: CONFIG, clock });
  rx = await startReceiver();
  worker = testWorker(t, { clock, listen: false });
});
afterAll(async () => {
  await worker.stop(1000);
  await rx.close();
  await t.close();
});

const db = () => t.storage.db;
const deliverAll = async () => {
  while ((await worker.runOnce()) > 0) {}
};
/** The event types a receiver path got, in order. */
const got = (path: string) =>
  rx.received.filter((r) => r.path === path).map((r) => (JSON.parse(r.body) as { event: string }).event);

/** Every table of the database (not the migrator's own). */
async function tables(): Promise<string[]> {
  const rows =
    t.storage.dialect.name === 'postgres'
      ? (
          await sql<{ name: string }>`select table_name as name from information_schema.tables
            where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(db())
        ).rows
      : (
          await sql<{ name: string }>`select name from sqlite_master where type = 'table'
            and name not like 'sqlite_%'`.execute(db())
        ).rows;
  return rows.map((r) => r.name).filter((n) => !n.startsWith('kysely_'));
}

/** How the test itself finds a workspace's rows in a table without `workspace_id` (independent of the job's rules). */
const PARENT: Record<string, [column: string, parent: string]> = {
  delivery_attempts: ['delivery_id', 'deliveries'],
  exhausted_deliveries: ['event_id', 'events'],
  mailbox: ['notification_id', 'notifications'],
  notification_preferences: ['user_id', 'users'],
  user_test_profiles: ['user_id', 'users'],
  invoice_lines: ['invoice_id', 'invoices'],
};

async function hasWorkspaceId(table: string): Promise<boolean> {
  const cols =
    t.storage.dialect.name === 'postgres'
      ? (
          await sql<{ name: string }>`select column_name as name from information_schema.columns
            where table_schema = current_schema() and table_name = ${table}`.execute(db())
        ).rows
      : (await sql<{ name: string }>`select name from pragma_table_info(${table})`.execute(db())).rows;
  return cols.some((c) => c.name === 'workspace_id');
}

/** Rows per table that belong to `workspaceId` (tables with none are left out). */
async function countsOf(workspaceId: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of (await tables()).sort()) {
    let where: ReturnType<typeof sql>;
    if (table === 'workspaces') where = sql`id = ${workspaceId}`;
    else if (await hasWorkspaceId(table)) where = sql`workspace_id = ${workspaceId}`;
    else if (PARENT[table]) {
      const [column, parent] = PARENT[table];
      where = sql`${sql.ref(column)} in (select id from ${sql.table(parent)} where workspace_id = ${workspaceId})`;
    } else continue;
    const { rows } = await sql<{
      n: number | string;
    }>`select count(*) as n from ${sql.table(table)} where ${where}`.execute(db());
    const n = Number(rows[0]?.n ?? 0);
    if (n > 0) out[table] = n;
  }
  return out;
}

let hooks = 0;
/** A workspace with data of every kind the API and the jobs make: returns it with its webhook's receiver path. */
async function filled(name: string): Promise<TestWorkspace & { path: string; name: string }> {
  const ws = await newWorkspace(t, name);
  const path = `/deletion${++hooks}`;
  const hook = await t.request({
    method: 'POST',
    url: '/v1/webhooks',
    key: ws.live,
    body: { url: rx.url(path), events: ['*'] },
  });
  expect(hook.statusCode, hook.body).toBe(201);
  const m = await ws.member('member');
  for (let i = 0; i < 3; i++) {
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name: `R${i}`, type: 'standard' },
      headers: { 'idempotency-key': `k-${ws.id}-${i}` },
    });
    expect(res.statusCode, res.body).toBe(201);
  }
  expect(
    (await t.request({ method: 'PATCH', url: '/v1/users/me', key: m.test, body: { name: 'In test' } })).statusCode,
  ).toBe(200);
  expect((await t.request({ method: 'GET', url: '/v1/resources/res_missing', key: ws.live })).statusCode).toBe(404);
  await deliverAll();
  await t.services.usage.meter.flush();
  await t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')));
  return { ...ws, path, name };
}

describe('deleting a workspace (docs/data-lifecycle.md#deleting-a-workspace)', () => {
  it('every table has exactly one deletion rule (a new table must say what happens to its rows)', async () => {
    const ruled = WORKSPACE_TABLE_RULES.map((r) => r.table);
    expect(new Set(ruled).size).toBe(ruled.length);
    expect([...ruled].sort()).toEqual((await tables()).sort());
  });

  it('schedule, cancel, schedule again, then the job: only invoices and the tombstone remain', async () => {
    const a = await filled('Doomed workspace');
    const b = await filled('Other workspace');
    // Invoices for both: the job finalizes the period that ended an hour ago.
    nowMs += 40 * DAY;
    await t.services.billing.finalizeDue(t.services.uow.as(systemActor('scheduler:billing-invoices')));
    const before = { a: await countsOf(a.id), b: await countsOf(b.id) };
    expect(before.a.invoices).toBeGreaterThan(0);

    // Refused: a wrong or missing confirmation, a member's key; nothing changes.
    const del = (key: string, body?: unknown) => t.request({ method: 'DELETE', url: '/v1/workspace', key, body });
    expectError(await del(a.live, { confirm: 'Doomed' }), 400, 'validation_error');
    expectError(await del(a.live, {}), 400, 'validation_error');
    const member = await a.member('member');
    expectError(await del(member.live, { confirm: a.name }), 403, 'insufficient_scope');
    expect(await countsOf(b.id)).toEqual(before.b);

    await deliverAll();
    // A resource created before, whose delivery is still queued: held while the deletion is scheduled.
    const queued = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: a.live,
      body: { name: 'Q', type: 'standard' },
    });
    expect(queued.statusCode).toBe(201);
    const res = await del(a.live, { confirm: a.name });
    expect(res.statusCode, res.body).toBe(202);
    const deleteAt = new Date(nowMs + 30 * DAY).toISOString();
    expect(json(res).data).toMatchObject({ workspace_id: a.id, delete_at: deleteAt });
    for (const key of [a.live, a.test, member.live]) {
      expectError(await t.request({ method: 'GET', url: '/v1/users/me', key }), 401, 'workspace_deleted');
    }
    expect((await t.request({ method: 'GET', url: '/v1/users/me', key: b.live })).statusCode).toBe(200);
    expectError(await del(b.live, { confirm: a.name }), 400, 'validation_error');

    const seenA = got(a.path).length;
    await deliverAll();
    expect(got(a.path).slice(seenA)).toEqual(['workspace.deletion_scheduled']);
    const scheduled = JSON.parse(rx.received.filter((r) => r.path === a.path).at(-1)?.body ?? '{}');
    expect(scheduled.data).toEqual({ workspace_id: a.id, delete_at: deleteAt });

    // Every member is emailed.
    await t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')));
    const mails = await db()
      .selectFrom('mailbox')
      .innerJoin('notifications', 'notifications.id', 'mailbox.notification_id')
      .select(['mailbox.to_address', 'mailbox.subject'])
      .where('notifications.workspace_id', '=', a.id)
      .where('notifications.type', '=', 'workspace.deletion_scheduled')
      .execute();
    expect(mails.length).toBe(3);
    // Other notifications wait: the admin's notice of the member added before the scheduling is held.
    const memberAdded = () =>
      db()
        .selectFrom('notifications')
        .select('status')
        .where('workspace_id', '=', a.id)
        .where('type', '=', 'member.added')
        .where('status', '=', 'pending')
        .execute();
    expect(await memberAdded()).toHaveLength(1);

    // Cancel (an operator, as the console's admin would): keys work again, the held delivery goes out.
    await t.services.workspaceDeletion.cancel(asCli(t.services), a.id);
    expect((await t.request({ method: 'GET', url: '/v1/users/me', key: a.live })).statusCode).toBe(200);
    await deliverAll();
    expect(
      got(a.path)
        .slice(seenA + 1)
        .sort(),
    ).toEqual(['resource.created', 'workspace.deletion_cancelled']);

    // An export archive of each: a's goes with its workspace, b's stays.
    const [expA, expB] = [
      await t.services.exports.request(asCli(t.services), a.id),
      await t.services.exports.request(asCli(t.services), b.id),
    ];
    const exportJob = t.services.uow.as(systemActor('scheduler:exports'));
    while ((await t.services.exports.runDue(exportJob)) > 0) {}
    const archive = (id: string) => join(t.services.exports.dir, `${id}.tar.gz`);
    expect([existsSync(archive(expA.id)), existsSync(archive(expB.id))]).toEqual([true, true]);

    // Again, and past the grace period: the job deletes.
    expect((await del(a.live, { confirm: a.name })).statusCode).toBe(202);
    await deliverAll();
    const head = await db().selectFrom('audit_heads').selectAll().where('workspace_id', '=', a.id).executeTakeFirst();
    // What the meter counted so far is written (its timer would otherwise write b's requests at any moment).
    await t.services.usage.meter.flush();
    const beforeB = await countsOf(b.id);
    nowMs += 30 * DAY - 1;
    expect(
      await t.services.workspaceDeletion.runDue(t.services.uow.as(systemActor('scheduler:workspace-deletions'))),
    ).toBe(0);
    nowMs += 1;
    await expect(t.services.workspaceDeletion.cancel(asCli(t.services), a.id)).rejects.toMatchObject({
      code: 'deletion_in_progress',
    });
    expect(
      await t.services.workspaceDeletion.runDue(t.services.uow.as(systemActor('scheduler:workspace-deletions'))),
    ).toBeGreaterThan(0);
    // Requests counted for the workspace in memory but written after the job (another process's meter, or a flush
    // that lost the race) are dropped, not left behind without their workspace.
    t.services.usage.meter.record({
      workspaceId: a.id,
      env: 'live',
      keyId: 'key_late',
      route: 'GET /v1/users/me',
      status: 401,
      latencyMs: 1,
    });
    t.services.usage.meter.recordFailure({
      requestId: 'req_late',
      workspaceId: a.id,
      env: 'live',
      keyId: 'key_late',
      userId: 'usr_late',
      method: 'GET',
      route: '/v1/users/me',
      path: '/v1/users/me',
      status: 401,
      errorCode: 'workspace_deleted',
      errorMessage: null,
      latencyMs: 1,
      body: null,
      at: nowMs,
    });
    await t.services.usage.meter.flush();
    const after = await countsOf(a.id);
    expect(after).toEqual({
      invoices: before.a.invoices,
      invoice_lines: before.a.invoice_lines,
      workspace_tombstones: 1,
    });
    expect(await countsOf(b.id)).toEqual(beforeB);
    expect([existsSync(archive(expA.id)), existsSync(archive(expB.id))]).toEqual([false, true]);
    const tomb = await db()
      .selectFrom('workspace_tombstones')
      .selectAll()
      .where('workspace_id', '=', a.id)
      .executeTakeFirst();
    expect(tomb).toMatchObject({ audit_last_hash: head?.hash, deleted_at: expect.anything() });
    expect(Number(tomb?.audit_last_seq)).toBe(Number(head?.seq));
    expectError(await t.request({ method: 'GET', url: '/v1/users/me', key: a.live }), 401, 'invalid_token');
    // Each deletion event reached the receiver once.
    expect(got(a.path).filter((e) => e === 'workspace.deletion_scheduled')).toHaveLength(2);
    expect(got(a.path).filter((e) => e === 'workspace.deletion_cancelled')).toHaveLength(1);
  });

  it('the console: an admin schedules by typing the name, sees the state, cancels; a member cannot', async () => {
    const out = await t.services.workspaces.create(asCli(t.services), {
      name: 'Console WS',
      adminEmail: `c${Date.now()}@example.test`,
    });
    const ws = out.workspace.id;
    const admin = await signInWithLink(t, out.set_password_url);
    const state = () => admin.call({ method: 'GET', url: '/console/api/workspace/deletion', ws, env: 'live' });
    expect(json(await state()).data).toMatchObject({ workspace_id: ws, delete_at: null });
    const wrong = await admin.call({
      method: 'DELETE',
      url: '/console/api/v1/workspace',
      ws,
      env: 'live',
      body: { confirm: 'console ws' },
    });
    expectError(wrong, 400, 'validation_error');
    const cancelNone = await admin.call({
      method: 'POST',
      url: '/console/api/workspace/deletion/cancel',
      ws,
      env: 'live',
    });
    expectError(cancelNone, 409, 'deletion_not_scheduled');
    const ok = await admin.call({
      method: 'DELETE',
      url: '/console/api/v1/workspace',
      ws,
      env: 'live',
      body: { confirm: 'Console WS' },
    });
    expect(ok.statusCode, ok.body).toBe(202);
    // The session still works (its keys do not): the console reads the state and can cancel.
    expect(json(await state()).data.delete_at).toBe(new Date(nowMs + 30 * DAY).toISOString());
    expectError(
      await t.request({ method: 'GET', url: '/v1/users/me', key: out.keys.live.key }),
      401,
      'workspace_deleted',
    );
    const invite = await t.services.members.invite(asCli(t.services), ws, {
      email: `m${Date.now()}@example.test`,
      role: 'member',
    });
    const member = await signInWithLink(t, invite.invite_url);
    expectError(
      await member.call({ method: 'POST', url: '/console/api/workspace/deletion/cancel', ws, env: 'live' }),
      403,
      'insufficient_scope',
    );
    const cancel = await admin.call({ method: 'POST', url: '/console/api/workspace/deletion/cancel', ws, env: 'live' });
    expect(cancel.statusCode, cancel.body).toBe(200);
    expect(json(await state()).data.delete_at).toBeNull();
    expect((await t.request({ method: 'GET', url: '/v1/users/me', key: out.keys.live.key })).statusCode).toBe(200);
  });

  it('the CLI: `wsvc workspaces delete` checks the name; `cancel-deletion` restores the keys', async () => {
    const ws = await newWorkspace(t, 'CLI WS');
    const url = databaseUrlOf(t.storage as typeof t.storage & { url: string; schema?: string });
    const wrong = await runWsvc(url, ['workspaces', 'delete', ws.id, '--confirm', 'CLI']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^error: validation_error: /);
    const ok = await runWsvc(url, ['workspaces', 'delete', ws.id, '--confirm', 'CLI WS', '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout).deletion).toMatchObject({ workspace_id: ws.id, scheduled_by: 'cli' });
    expectError(await t.request({ method: 'GET', url: '/v1/users/me', key: ws.live }), 401, 'workspace_deleted');
    const again = await runWsvc(url, ['workspaces', 'delete', ws.id, '--confirm', 'CLI WS']);
    expect(again.stderr).toMatch(/^error: deletion_scheduled: /);
    const cancel = await runWsvc(url, ['workspaces', 'cancel-deletion', ws.id]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect((await t.request({ method: 'GET', url: '/v1/users/me', key: ws.live })).statusCode).toBe(200);
  });
});
