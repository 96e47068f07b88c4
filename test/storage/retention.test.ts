import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { type SystemActor, systemActor } from '../../src/kernel/principal.js';
import type { Unit } from '../../src/platform/unit-of-work.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';

// Backends: both — the purges delete in batches of rows chosen by SQL (LIMIT, IN) on each database
// Tier: quick
// docs/settings.md#retention: EVENT_RETENTION_DAYS, REQUEST_LOG_RETENTION_DAYS and AUDIT_RETENTION_DAYS set the
// cut-off (a record exactly that old stays); each purge deletes in batches of 1,000 rows, each its own
// transaction, and records one entry in each workspace where a run deleted something; the lists say the period.

const DAY = 86_400_000;
const start = Date.parse('2026-11-01T00:00:00.000Z');
let now = start;
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({
    clock: { now: () => now },
    config: {
      EVENT_RETENTION_DAYS: 3,
      REQUEST_LOG_RETENTION_DAYS: 2,
      AUDIT_RETENTION_DAYS: 5,
      WEBHOOK_ALLOW_INSECURE_URLS: true,
      USAGE_FLUSH_MS: 600_000,
    },
  });
});
afterAll(() => t?.close());

const iso = (ms: number) => new Date(ms).toISOString();

/** Runs `fn` with a door that counts the changes (transactions) it begins. */
function countingUnit(name: `scheduler:${string}`): { u: Unit<SystemActor>; runs: () => number } {
  const base = t.services.uow.as(systemActor(name));
  let runs = 0;
  const u: Unit<SystemActor> = {
    actor: base.actor,
    run: (fn, opts) => {
      runs++;
      return base.run(fn, opts);
    },
    as: (other) => base.as(other),
  };
  return { u, runs: () => runs };
}

/** A workspace's audit entries of `action`, after the sequencer has written them (verify flushes it). */
async function entries(workspaceId: string, action: string) {
  const [check] = await t.services.audit.verify(workspaceId);
  expect(check?.ok, JSON.stringify(check)).toBe(true);
  const rows = await t.storage.db
    .selectFrom('audit_entries')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('action', '=', action as never)
    .orderBy('seq')
    .execute();
  return rows.map((r) => ({ actor: r.actor_id, target: r.target_id, changes: JSON.parse(r.changes) }));
}

async function insertRequestLog(workspaceId: string, n: number, at: string, tag: string) {
  for (let i = 0; i < n; i += 500) {
    const rows = Array.from({ length: Math.min(500, n - i) }, (_, j) => ({
      id: `rlg_${tag}_${i + j}`,
      request_id: `req_${tag}_${i + j}`,
      workspace_id: workspaceId,
      env: 'live' as const,
      key_id: 'key_x',
      user_id: 'usr_x',
      method: 'GET',
      route: 'GET /v1/resources/:id',
      path: '/v1/resources/res_x',
      status: 404,
      error_code: 'not_found',
      error_message: 'No such resource.',
      latency_ms: 1,
      body: null,
      created_at: at,
    }));
    await t.storage.db.insertInto('request_log').values(rows).execute();
  }
}

async function insertEvents(workspaceId: string, n: number, at: string, tag: string) {
  for (let i = 0; i < n; i += 500) {
    const rows = Array.from({ length: Math.min(500, n - i) }, (_, j) => ({
      id: `evt_${tag}_${i + j}`,
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

async function countWhere(table: 'events' | 'request_log' | 'deliveries', workspaceId: string) {
  const r = await t.storage.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

describe('retention settings (docs/settings.md#retention)', () => {
  it('rejects 0 and negative periods, naming the setting', () => {
    for (const name of ['EVENT_RETENTION_DAYS', 'REQUEST_LOG_RETENTION_DAYS', 'AUDIT_RETENTION_DAYS']) {
      for (const value of ['0', '-1']) {
        let err: unknown;
        try {
          loadConfig({ [name]: value });
        } catch (e) {
          err = e;
        }
        expect(err, `${name}=${value}`).toBeInstanceOf(ConfigError);
        expect((err as ConfigError).problems).toEqual([expect.stringMatching(new RegExp(`^${name} must be`))]);
      }
      expect(loadConfig({ [name]: '1' })[name as 'EVENT_RETENTION_DAYS']).toBe(1);
    }
    const defaults = loadConfig({});
    expect([defaults.EVENT_RETENTION_DAYS, defaults.REQUEST_LOG_RETENTION_DAYS, defaults.AUDIT_RETENTION_DAYS]).toEqual(
      [30, 7, 400],
    );
  });

  it('EVENT_RETENTION_DAYS sets the cut-off: an event exactly that old stays, one older goes with its deliveries and attempts', async () => {
    now = start;
    const ws = await newWorkspace(t);
    const hook = await t.request({
      method: 'POST',
      url: '/v1/webhooks',
      key: ws.live,
      body: { url: 'http://127.0.0.1:9/hook', events: ['resource.created'] },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    const create = async (name: string) => {
      const res = await t.request({
        method: 'POST',
        url: '/v1/resources',
        key: ws.live,
        body: { name, type: 'standard' },
      });
      expect(res.statusCode, res.body).toBe(201);
      return json(res).data.id as string;
    };
    now = start + 1000;
    const old = await create('old');
    now = start + 2000;
    const limit = await create('limit');
    const deliveriesOf = (resourceId: string) =>
      t.storage.db
        .selectFrom('deliveries')
        .innerJoin('events', 'events.id', 'deliveries.event_id')
        .select('deliveries.id')
        .where('events.resource_id', '=', resourceId)
        .execute();
    const [oldDelivery] = await deliveriesOf(old);
    expect(oldDelivery).toBeDefined();
    await t.storage.db
      .insertInto('delivery_attempts')
      .values({
        delivery_id: oldDelivery?.id as string,
        number: 1,
        attempted_at: iso(start + 1500),
        duration_ms: 5,
        response_status: 500,
        response_body: 'no',
        error: null,
      })
      .execute();

    // The lists say the period.
    for (const url of ['/v1/events', '/v1/deliveries']) {
      expect(json(await t.request({ method: 'GET', url, key: ws.live })).meta.retention_days).toBe(3);
    }

    // 3 days after "limit": "old" is 1 s older than the limit and goes; "limit" stays.
    now = start + 2000 + 3 * DAY;
    const job = t.services.jobs.find((j) => j.id === 'purge-events');
    expect(await job?.run()).toBeGreaterThanOrEqual(2);
    const left = json(await t.request({ method: 'GET', url: '/v1/events?limit=100', key: ws.live }));
    const resourcesLeft = left.data.map((e: { data: { resource_id?: string } }) => e.data.resource_id);
    expect(resourcesLeft).toContain(limit);
    expect(resourcesLeft).not.toContain(old);
    expect(await deliveriesOf(limit)).toHaveLength(1);
    const oldDeliveryLeft = await t.storage.db
      .selectFrom('deliveries')
      .select('id')
      .where('id', '=', oldDelivery?.id as string)
      .execute();
    expect(oldDeliveryLeft).toEqual([]);
    const attemptsLeft = await t.storage.db
      .selectFrom('delivery_attempts')
      .select('number')
      .where('delivery_id', '=', oldDelivery?.id as string)
      .execute();
    expect(attemptsLeft).toEqual([]);
    const purged = await entries(ws.id, 'events.purged');
    expect(purged).toHaveLength(1);
    expect(purged[0]).toMatchObject({ actor: 'scheduler:purge-events', target: ws.id });
    expect(purged[0]?.changes.deliveries_purged).toEqual({ before: null, after: 1 });
    expect(purged[0]?.changes.events_purged.after).toBeGreaterThanOrEqual(1);

    // A run that deletes nothing records nothing.
    expect(await job?.run()).toBe(0);
    expect(await entries(ws.id, 'events.purged')).toHaveLength(1);

    // One millisecond later "limit" is older than 3 days and goes.
    now = start + 2000 + 3 * DAY + 1;
    await job?.run();
    expect(await deliveriesOf(limit)).toEqual([]);
    expect(await entries(ws.id, 'events.purged')).toHaveLength(2);
  });

  it('deletes more events than one batch, in several transactions, with one entry per workspace', async () => {
    now = start + 100 * DAY;
    const a = await newWorkspace(t);
    const b = await newWorkspace(t);
    await insertEvents(a.id, 2_100, iso(now - 3 * DAY - 1), 'a');
    await insertEvents(b.id, 7, iso(now - 3 * DAY - 1), 'b');
    await insertEvents(a.id, 1, iso(now - 3 * DAY), 'kept');
    const { u, runs } = countingUnit('scheduler:purge-events');
    const before = (await entries(a.id, 'events.purged')).length;
    expect(await t.services.outbox.purgeExpired(u, now)).toBeGreaterThanOrEqual(2_107);
    // Deliveries: one batch that finds none; events: 1,000 + 1,000 + the rest.
    expect(runs()).toBeGreaterThanOrEqual(4);
    expect(await countWhere('events', a.id)).toBeGreaterThanOrEqual(1);
    const kept = await t.storage.db.selectFrom('events').select('id').where('id', '=', 'evt_kept_0').execute();
    expect(kept).toHaveLength(1);
    const oldLeft = await t.storage.db
      .selectFrom('events')
      .select('id')
      .where('workspace_id', 'in', [a.id, b.id])
      .where('created_at', '<', iso(now - 3 * DAY))
      .execute();
    expect(oldLeft).toEqual([]);
    const ofA = await entries(a.id, 'events.purged');
    expect(ofA).toHaveLength(before + 1);
    expect(ofA.at(-1)?.changes.events_purged.after).toBeGreaterThanOrEqual(2_100);
    const ofB = await entries(b.id, 'events.purged');
    expect(ofB).toHaveLength(1);
    expect(ofB[0]?.changes.events_purged.after).toBeGreaterThanOrEqual(7);
  });

  it('REQUEST_LOG_RETENTION_DAYS: the request log purge keeps one exactly that old and deletes more than a batch', async () => {
    now = start + 200 * DAY;
    const a = await newWorkspace(t);
    const b = await newWorkspace(t);
    expect(json(await t.request({ method: 'GET', url: '/v1/requests', key: a.live })).meta.retention_days).toBe(2);
    await insertRequestLog(a.id, 2_345, iso(now - 2 * DAY - 1), 'a');
    await insertRequestLog(b.id, 12, iso(now - 2 * DAY - 1), 'b');
    await insertRequestLog(a.id, 1, iso(now - 2 * DAY), 'kept');
    const { u, runs } = countingUnit('scheduler:usage-rollup');
    const rollupRuns = 3; // minutes into hours, hours into days, old days
    expect(await t.services.usage.rollup(u)).toBeGreaterThanOrEqual(2_357);
    expect(runs() - rollupRuns).toBe(3); // 1,000 + 1,000 + 357
    expect(await countWhere('request_log', a.id)).toBe(1);
    expect(await countWhere('request_log', b.id)).toBe(0);
    expect(await entries(a.id, 'request_log.purged')).toEqual([
      { actor: 'scheduler:usage-rollup', target: a.id, changes: { requests_purged: { before: null, after: 2_345 } } },
    ]);
    expect(await entries(b.id, 'request_log.purged')).toEqual([
      { actor: 'scheduler:usage-rollup', target: b.id, changes: { requests_purged: { before: null, after: 12 } } },
    ]);
    // Nothing left to delete: no entry.
    await t.services.usage.rollup(t.services.uow.as(systemActor('scheduler:usage-rollup')));
    expect(await entries(a.id, 'request_log.purged')).toHaveLength(1);
    expect(await countWhere('request_log', a.id)).toBe(1);
  });

  it('usage day rows past 400 days go in batches of 500 by their key, one usage.purged per workspace; one exactly that old stays', async () => {
    now = start + 900 * DAY;
    const a = await newWorkspace(t);
    const b = await newWorkspace(t);
    const dayRow = (workspaceId: string, day: number, route: string) => ({
      workspace_id: workspaceId,
      env: 'live' as const,
      key_id: 'key_x',
      route,
      status: 200,
      granularity: 'day' as const,
      period_start: iso(now - day * DAY),
      count: 1,
      latency_sum_ms: 1,
    });
    // 1,203 old rows of `a` over three days (same key, many routes), 4 of `b`, and one row of each exactly 400 days old.
    for (const day of [401, 402, 403]) {
      for (let i = 0; i < 401; i += 200) {
        const n = Math.min(200, 401 - i);
        await t.storage.db
          .insertInto('usage_counts')
          .values(Array.from({ length: n }, (_, j) => dayRow(a.id, day, `GET /r${i + j}`)))
          .execute();
      }
    }
    await t.storage.db
      .insertInto('usage_counts')
      .values([1, 2, 3, 4].map((i) => dayRow(b.id, 401, `GET /r${i}`)))
      .execute();
    await t.storage.db
      .insertInto('usage_counts')
      .values([dayRow(a.id, 400, 'GET /kept'), dayRow(b.id, 400, 'GET /kept')])
      .execute();
    const dayRows = async (workspaceId: string) =>
      (
        await t.storage.db
          .selectFrom('usage_counts')
          .select('route')
          .where('workspace_id', '=', workspaceId)
          .where('granularity', '=', 'day')
          .execute()
      ).map((r) => r.route);
    const { u, runs } = countingUnit('scheduler:usage-rollup');
    expect(await t.services.usage.rollup(u)).toBeGreaterThanOrEqual(1_207); // and what earlier tests left in the request log
    // minutes into hours, hours into days; then 500 + 500 + 207 rows; then the request log's one batch.
    expect(runs()).toBe(2 + 3 + 1);
    expect(await dayRows(a.id)).toEqual(['GET /kept']);
    expect(await dayRows(b.id)).toEqual(['GET /kept']);
    expect(await entries(a.id, 'usage.purged')).toEqual([
      { actor: 'scheduler:usage-rollup', target: a.id, changes: { usage_days_purged: { before: null, after: 1_203 } } },
    ]);
    expect(await entries(b.id, 'usage.purged')).toEqual([
      { actor: 'scheduler:usage-rollup', target: b.id, changes: { usage_days_purged: { before: null, after: 4 } } },
    ]);
    await t.services.usage.rollup(u);
    expect(await entries(a.id, 'usage.purged')).toHaveLength(1);
  });

  it('expired sign-in steps (failures, pending sign-ins, passkey challenges, SSO sign-ins) go in batches of 1,000', async () => {
    now = start + 1000 * DAY;
    const old = iso(now - 16 * 60_000);
    const fresh = iso(now);
    const many = (n: number, f: (i: number) => object) => Array.from({ length: n }, (_, i) => f(i));
    for (let i = 0; i < 1_001; i += 500) {
      const n = Math.min(500, 1_001 - i);
      await t.storage.db
        .insertInto('console_sign_in_failures')
        .values(many(n, (j) => ({ id: `fail_${i + j}`, subject: 'x@example.com', at: old })) as never)
        .execute();
    }
    await t.storage.db
      .insertInto('console_sign_in_failures')
      .values({ id: 'fail_new', subject: 'x', at: fresh })
      .execute();
    await t.storage.db
      .insertInto('console_webauthn_challenges')
      .values([
        {
          challenge: 'c_old',
          purpose: 'sign_in' as never,
          email: null,
          created_at: old,
          expires_at: old,
          used_at: null,
        },
        {
          challenge: 'c_new',
          purpose: 'sign_in' as never,
          email: null,
          created_at: fresh,
          expires_at: iso(now + 60_000),
          used_at: null,
        },
      ])
      .execute();
    const { u, runs } = countingUnit('scheduler:purge-sign-in-steps');
    expect(await t.services.consoleAuth.purgeFailures(u)).toBe(1_001);
    expect(runs()).toBe(2 + 1); // 1,000 + 1 failures; no pending sign-in
    expect(await t.services.mfa.purgeChallenges(u)).toBe(1);
    const left = await t.storage.db.selectFrom('console_sign_in_failures').select('id').execute();
    expect(left.map((r) => r.id)).toEqual(['fail_new']);
    const challenges = await t.storage.db.selectFrom('console_webauthn_challenges').select('challenge').execute();
    expect(challenges.map((r) => r.challenge)).toEqual(['c_new']);
  });

  it('AUDIT_RETENTION_DAYS: the audit purge deletes more than a batch, the chain still verifies, one audit.purged', async () => {
    now = start + 300 * DAY;
    const ws = await newWorkspace(t);
    expect(json(await t.request({ method: 'GET', url: '/v1/audit-log', key: ws.live })).meta.retention_days).toBe(5);
    await t.services.uow.as(systemActor('cli')).run(async ({ audit }) => {
      for (let i = 0; i < 2_050; i++) {
        audit.record({
          action: 'resource.updated',
          target: { type: 'resource', id: 'res_x' },
          env: 'live',
          workspaceId: ws.id,
          changes: { name: { before: `a${i}`, after: `b${i}` } },
        });
      }
    });
    const at = now;
    now = at + 1;
    await t.services.uow.as(systemActor('cli')).run(async ({ audit }) => {
      audit.record({
        action: 'resource.updated',
        target: { type: 'resource', id: 'res_limit' },
        env: 'live',
        workspaceId: ws.id,
      });
    });
    now = at + 1 + 5 * DAY;
    await t.services.audit.verify(ws.id); // the sequencer has written every entry
    const total = await t.storage.db
      .selectFrom('audit_entries')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('workspace_id', '=', ws.id)
      .executeTakeFirstOrThrow();
    const expired = Number(total.n) - 1; // all but res_limit, exactly 5 days old
    expect(expired).toBeGreaterThan(2_050);
    const { u, runs } = countingUnit('scheduler:purge-audit');
    // Other tests' workspaces are purged too.
    expect(await t.services.audit.purgeExpired(u)).toBeGreaterThanOrEqual(expired);
    expect(runs()).toBeGreaterThanOrEqual(3);
    const purged = await entries(ws.id, 'audit.purged');
    expect(purged).toHaveLength(1);
    expect(purged[0]?.changes.entries_purged).toEqual({ before: null, after: expired });
    const left = await t.storage.db
      .selectFrom('audit_entries')
      .select(['target_id', 'action'])
      .where('workspace_id', '=', ws.id)
      .orderBy('seq')
      .execute();
    expect(left).toEqual([
      { target_id: 'res_limit', action: 'resource.updated' },
      { target_id: ws.id, action: 'audit.purged' },
    ]);
    expect(await t.services.audit.purgeExpired(t.services.uow.as(systemActor('scheduler:purge-audit')))).toBe(0);
    expect(await entries(ws.id, 'audit.purged')).toHaveLength(1);
  });

  it('the idempotency and notification purges run in batches too, one entry per workspace that lost rows', async () => {
    now = start + 400 * DAY;
    const a = await newWorkspace(t);
    const b = await newWorkspace(t);
    const expired = iso(now - 1);
    for (let i = 0; i < 1_005; i += 335) {
      await t.storage.db
        .insertInto('idempotency_keys')
        .values(
          Array.from({ length: 335 }, (_, j) => ({
            workspace_id: a.id,
            env: 'live' as const,
            key: `k${i + j}`,
            request_hash: 'h',
            state: 'done' as const,
            status_code: 201,
            response_body: '{}',
            locked_until: expired,
            expires_at: expired,
            created_at: iso(now - DAY),
          })),
        )
        .execute();
    }
    // Same key in another workspace, not expired: stays.
    await t.storage.db
      .insertInto('idempotency_keys')
      .values({
        workspace_id: b.id,
        env: 'live',
        key: 'k0',
        request_hash: 'h',
        state: 'done',
        status_code: 201,
        response_body: '{}',
        locked_until: iso(now + DAY),
        expires_at: iso(now + DAY),
        created_at: iso(now),
      })
      .execute();
    const { u, runs } = countingUnit('scheduler:purge-idempotency');
    expect(await t.services.idempotency.purgeExpired(u)).toBe(1_005);
    expect(runs()).toBe(2); // 1,000 + 5
    const left = await t.storage.db
      .selectFrom('idempotency_keys')
      .select(['workspace_id', 'key'])
      .where('workspace_id', 'in', [a.id, b.id])
      .execute();
    expect(left).toEqual([{ workspace_id: b.id, key: 'k0' }]);
    expect(await entries(a.id, 'idempotency.purged')).toEqual([
      {
        actor: 'scheduler:purge-idempotency',
        target: a.id,
        changes: { records_purged: { before: null, after: 1_005 } },
      },
    ]);
    expect(await entries(b.id, 'idempotency.purged')).toEqual([]);
    expect(await t.services.idempotency.purgeExpired(u)).toBe(0);
    expect(await entries(a.id, 'idempotency.purged')).toHaveLength(1);

    // Notifications: 90 days; one exactly that old stays.
    const note = (id: string, at: number) => ({
      id,
      workspace_id: b.id,
      user_id: b.adminId,
      category: 'security' as never,
      type: 'key.expiring' as never,
      data: '{}',
      status: 'sent' as const,
      attempt_count: 1,
      next_attempt_at: null,
      lease_until: null,
      leased_by: null,
      last_error: null,
      sent_at: iso(at),
      created_at: iso(at),
    });
    await t.storage.db
      .insertInto('notifications')
      .values([note('ntf_old', now - 90 * DAY - 1), note('ntf_limit', now - 90 * DAY)])
      .execute();
    const job = t.services.jobs.find((j) => j.id === 'purge-notifications');
    expect(await job?.run()).toBeGreaterThanOrEqual(1);
    const notes = await t.storage.db
      .selectFrom('notifications')
      .select('id')
      .where('id', 'in', ['ntf_old', 'ntf_limit'])
      .execute();
    expect(notes).toEqual([{ id: 'ntf_limit' }]);
    expect(await entries(b.id, 'notifications.purged')).toEqual([
      {
        actor: 'scheduler:purge-notifications',
        target: b.id,
        changes: { notifications_purged: { before: null, after: 1 } },
      },
    ]);
    await job?.run();
    expect(await entries(b.id, 'notifications.purged')).toHaveLength(1);
  });
});
