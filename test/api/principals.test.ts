import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionPrincipal } from '../../src/kernel/principal.js';
import { asCli, json, keyPrincipal, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — the write runner's checks read stored rows inside each write's transaction
// Tier: quick

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { WEBHOOK_ALLOW_INSECURE_URLS: true } });
});
afterAll(() => t.close());

describe('principals: the services check whoever calls them, at commit', () => {
  it("a key's principal given to the services directly creates, archives and deletes resources, with their events", async () => {
    const ws = await newWorkspace(t);
    const admin = await keyPrincipal(t.services, ws.live);
    const r = await t.services.resources.create(t.services.uow.as(admin), {
      name: 'From a service call',
      type: 'standard',
    });
    expect((await t.services.resources.archive(t.services.uow.as(admin), r.id)).status).toBe('archived');
    const seen = json(await t.request({ method: 'GET', url: `/v1/resources/${r.id}`, key: ws.live }));
    expect(seen.data.status).toBe('archived');
    await t.services.resources.remove(t.services.uow.as(admin), r.id);
    const events = json(await t.request({ method: 'GET', url: '/v1/events', key: ws.live }));
    expect(events.data.map((e: { event: string }) => e.event)).toEqual(['resource.deleted']);
  });

  it("a key's principal registers webhooks in its own environment", async () => {
    const ws = await newWorkspace(t);
    const admin = await keyPrincipal(t.services, ws.test);
    const hook = await t.services.webhooks.create(t.services.uow.as(admin), {
      url: 'http://127.0.0.1:9/hook',
      events: ['*'],
    });
    const listed = json(await t.request({ method: 'GET', url: '/v1/webhooks', key: ws.test }));
    expect(listed.data.map((w: { id: string }) => w.id)).toEqual([hook.id]);
  });

  it('a principal read before its user was removed writes nothing (401 expired_token)', async () => {
    const ws = await newWorkspace(t);
    const m = await ws.member('member');
    const forUser = await keyPrincipal(t.services, m.live);
    await t.services.resources.create(t.services.uow.as(forUser), { name: 'ok', type: 'standard' });
    await t.services.users.remove(asCli(t.services), m.userId);
    await expect(
      t.services.resources.create(t.services.uow.as(forUser), { name: 'no', type: 'standard' }),
    ).rejects.toMatchObject({
      code: 'expired_token',
    });
  });

  it('a console session that does not exist (or ended) writes nothing: 401', async () => {
    const ws = await newWorkspace(t);
    const session: SessionPrincipal = {
      kind: 'session',
      sessionId: 'ses_x',
      userId: ws.adminId,
      workspaceId: ws.id,
      env: 'live',
      role: 'admin',
      scopes: null,
    };
    await expect(
      t.services.resources.create(t.services.uow.as(session), { name: 'no', type: 'standard' }),
    ).rejects.toMatchObject({
      statusCode: 401,
    });
  });

  it('a kind without a registered write-time check cannot write (fails closed)', async () => {
    const ws = await newWorkspace(t);
    const robot = {
      kind: 'robot',
      sessionId: 'ses_x',
      userId: ws.adminId,
      workspaceId: ws.id,
      env: 'live',
      role: 'admin',
      scopes: null,
    } as unknown as SessionPrincipal;
    await expect(
      t.services.resources.create(t.services.uow.as(robot), { name: 'no', type: 'standard' }),
    ).rejects.toThrow(/no principal check registered/);
  });

  it('the worker, each periodic job and the CLI write as named system actors, through the write runner', async () => {
    const original = t.services.checks.system;
    if (!original) throw new Error('no system check');
    // The key-expiry job writes only when a key expires within 7 days: one does.
    const ws = await newWorkspace(t);
    const expiresAt = new Date(Date.now() + 24 * 3_600_000).toISOString();
    await t.services.keyRegistry.create(asCli(t.services), {
      userId: ws.adminId,
      env: 'live',
      name: 'Expiring',
      expiresAt,
    });
    const seen: string[] = [];
    t.services.checks.system = async (trx, p) => {
      seen.push(p.name);
      return original(trx, p);
    };
    try {
      for (const job of t.services.jobs) await job.run();
      await testWorker(t, { listen: false }).runOnce();
    } finally {
      t.services.checks.system = original;
    }
    expect(seen).toEqual(
      expect.arrayContaining([
        'scheduler:purge-events',
        'scheduler:purge-idempotency',
        'scheduler:key-expiry-notices',
        'worker',
      ]),
    );
  });

  it('a worker or job write whose actor fails its check changes nothing', async () => {
    // The billing job writes only when a period is due: a subscription billed since 2020 has many.
    const ws = await newWorkspace(t);
    await t.storage.db
      .updateTable('subscriptions')
      .set({ anchor_at: '2020-01-15T10:00:00.000Z', started_at: '2020-01-15T10:00:00.000Z' })
      .where('workspace_id', '=', ws.id)
      .execute();
    // The usage-notice job writes only when a threshold is reached: 6,000 live requests today of the free plan's 10,000.
    const today = `${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`;
    await t.storage.db
      .insertInto('usage_counts')
      .values({
        workspace_id: ws.id,
        env: 'live',
        key_id: 'key_principals',
        route: 'GET /v1/resources',
        status: 200,
        granularity: 'day',
        period_start: today,
        count: 6000,
        latency_sum_ms: 0,
      })
      .execute();
    // The key-expiry job writes only when a key expires within 7 days.
    const expiresAt = new Date(Date.now() + 24 * 3_600_000).toISOString();
    const expiring = await t.services.keyRegistry.create(asCli(t.services), {
      userId: ws.adminId,
      env: 'live',
      name: 'Expiring',
      expiresAt,
    });
    // The audit purge writes only when an entry is older than AUDIT_RETENTION_DAYS: the workspace's first (its creation)
    // made as old as that.
    await t.storage.db
      .updateTable('audit_entries')
      .set({ time: '2000-01-01T00:00:00.000Z' })
      .where('workspace_id', '=', ws.id)
      .execute();
    // The workspace-deletions job writes only when a grace period has ended: one scheduled, its deadline passed.
    const doomed = await newWorkspace(t, 'Doomed');
    await t.services.workspaceDeletion.schedule(asCli(t.services), doomed.id, { confirm: 'Doomed' });
    await t.storage.db
      .updateTable('workspaces')
      .set({ delete_at: '2000-01-01T00:00:00.000Z' })
      .where('id', '=', doomed.id)
      .execute();
    const original = t.services.checks.system;
    t.services.checks.system = async () => false;
    try {
      for (const job of t.services.jobs)
        await expect(job.run(), job.id).rejects.toMatchObject({ code: 'expired_token' });
    } finally {
      t.services.checks.system = original;
    }
    expect(await t.storage.db.selectFrom('invoices').selectAll().where('workspace_id', '=', ws.id).execute()).toEqual(
      [],
    );
    expect(
      await t.storage.db.selectFrom('usage_notices').selectAll().where('workspace_id', '=', ws.id).execute(),
    ).toEqual([]);
    const told = await t.storage.db
      .selectFrom('notifications')
      .select('id')
      .where('workspace_id', '=', ws.id)
      .where('type', '=', 'key.expiring')
      .execute();
    expect(told).toEqual([]);
    expect(await t.services.workspaceDeletion.tombstone(doomed.id)).toBeUndefined();
    expect(await t.services.workspaceDeletion.state(doomed.id)).toMatchObject({ workspace_id: doomed.id });
    const key = await t.storage.db
      .selectFrom('api_keys')
      .select('expiry_notice_at')
      .where('id', '=', expiring.id)
      .executeTakeFirst();
    expect(key?.expiry_notice_at).toBeNull();
    // The old audit entries (the workspace's creation, the key the operator made) are still there, and no
    // audit.purged was recorded.
    expect(
      (
        await t.storage.db
          .selectFrom('audit_entries')
          .select('action')
          .where('workspace_id', '=', ws.id)
          .orderBy('seq')
          .execute()
      ).map((r) => r.action),
    ).toEqual(['workspace.created', 'key.created']);
  });
});
