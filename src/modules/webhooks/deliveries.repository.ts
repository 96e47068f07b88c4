import { type SelectQueryBuilder, sql } from 'kysely';
import { type Db, type Dialect, later } from '../../db/dialect.js';
import { batchAfterId, pageById } from '../../db/keyset.js';
import { type Param, prepared } from '../../db/prepared.js';
import { withRowLockSkipping } from '../../db/row-locks.js';
import type { Database, DeliveriesTable, DeliveryStatus, WebhooksTable } from '../../db/types.js';
import type { Env } from '../../kernel/environments.js';
import type { Tenant } from '../../kernel/principal.js';
import type { PageRequest } from '../../lib/paging.js';
import { countByWorkspace, PURGE_BATCH_ROWS } from '../../platform/batched-purge.js';
import type { WriteTx } from '../../platform/unit-of-work.js';
import type { AttemptResult, ClaimedDelivery } from '../delivery-engine/claims.js';
import type { Delivery, DeliveryDetail, DeliveryFilter } from './deliveries.schemas.js';

/** Row → API object. */
export function toDelivery(row: DeliveriesTable): Delivery {
  return {
    id: row.id,
    webhook_id: row.webhook_id,
    event_id: row.event_id,
    event: row.event_type,
    status: row.status,
    attempt_count: row.attempt_count,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    last_response_status: row.last_response_status,
    last_error: row.last_error,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

// Performance (docs/performance.md#queries-built-once): every resource write reads this (the outbox fan-out); built and compiled once.
const enabledQuery = prepared((db, $: Param<Tenant>) =>
  db
    .selectFrom('webhooks')
    .select(['id', 'events'])
    .where('workspace_id', '=', $('workspaceId'))
    .where('env', '=', $('env'))
    .where('status', '=', 'enabled')
    .orderBy('id'),
);

/** A query of event ids, built by the events module (it owns that table). */
export type EventIdsQuery = SelectQueryBuilder<Database, 'events', { id: string }>;

/** SQL of the delivery log and of the workers' claims (docs/api.md#webhook-deliveries, #deployment). */
export const deliveriesRepository = {
  /** A batch of the workspace's deliveries made since `since`, after `afterId`, oldest first (an export). */
  exportBatch: (db: Db, workspaceId: string, env: Env, since: string, afterId: string | null, limit: number) =>
    batchAfterId(db, 'deliveries', workspaceId, afterId, limit, { env, where: (eb) => eb('created_at', '>=', since) }),
  /** The enabled webhooks an event of this tenant fans out to (≤ 16, docs/api.md#webhooks). */
  async subscribers(db: Db, tenant: Tenant): Promise<Pick<WebhooksTable, 'id' | 'events'>[]> {
    return (await enabledQuery.execute(db, tenant)).rows;
  },

  insertMany(db: WriteTx, rows: DeliveriesTable[]) {
    // Sent just before the transaction's next statement, or with its COMMIT, where the dialect defers (dialect.ts, `later`).
    return rows.length === 0 ? Promise.resolve() : later(db, db.insertInto('deliveries').values(rows).compile());
  },

  /**
   * Claims up to `limit` due deliveries for `workerId` until `leaseUntil`: pending, due, and not
   * leased by a live worker, fairly: at most `perEndpoint` attempts per webhook counting the
   * `busy` ones this worker already has in flight, taken round-robin over workspaces and, within
   * one, over its endpoints, so a hanging receiver's backlog never takes the slots a healthy one
   * needs. Endpoints already at their cap are not even scanned. Concurrent workers skip each
   * other's rows (withRowLockSkipping, docs/api.md#deployment).
   */
  async claim(
    db: WriteTx,
    opts: {
      now: string;
      leaseUntil: string;
      workerId: string;
      limit: number;
      perEndpoint: number;
      /** Attempts in flight in this worker, per webhook id. */
      busy: ReadonlyMap<string, number>;
    },
  ): Promise<ClaimedDelivery[]> {
    const ids = await fairCandidates(db, opts);
    if (ids.length === 0) return [];
    const locked = withRowLockSkipping(
      db,
      db
        .selectFrom('deliveries')
        .select('id')
        .where('id', 'in', ids)
        .where('status', '=', 'pending')
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', opts.now)])),
    );
    const claimed = await db
      .updateTable('deliveries')
      .set({ lease_until: opts.leaseUntil, leased_by: opts.workerId })
      .where('id', 'in', locked)
      .returning(['id'])
      .execute();
    if (claimed.length === 0) return [];
    const details = await db
      .selectFrom('deliveries as d')
      .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
      .innerJoin('events as e', 'e.id', 'd.event_id')
      .select([
        'd.id',
        'd.attempt_count',
        'd.webhook_id',
        'd.event_type',
        'w.status as webhook_status',
        'w.workspace_id',
        'w.url',
        'w.secret',
        'w.previous_secret',
        'w.previous_secret_expires_at',
        'e.id as event_id',
        'e.payload',
      ])
      .where(
        'd.id',
        'in',
        claimed.map((c) => c.id),
      )
      .execute();
    // Attempts start in the fair order chosen above.
    const order = new Map(ids.map((id, i) => [id, i]));
    return details
      .map((d) => ({
        ...d,
        previous_secret: d.previous_secret ?? null,
        previous_secret_expires_at: d.previous_secret_expires_at ?? null,
      }))
      .sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
  },

  /**
   * Writes attempts back, each only if `workerId` still holds the claim (a delivery cancelled or
   * taken over meanwhile is left alone). Returns the attempts written, in order.
   */
  async complete(db: WriteTx, workerId: string, results: AttemptResult[], now: string): Promise<AttemptResult[]> {
    const written: AttemptResult[] = [];
    for (const r of results) {
      const u = await db
        .updateTable('deliveries')
        .set((eb) =>
          r.attempt === null
            ? { status: r.status, next_attempt_at: null, lease_until: null, leased_by: null, updated_at: now }
            : {
                status: r.status,
                attempt_count: eb('attempt_count', '+', 1),
                next_attempt_at: r.nextAttemptAt,
                lease_until: null,
                leased_by: null,
                last_response_status: r.attempt.response_status,
                last_error: r.attempt.error,
                updated_at: now,
              },
        )
        .where('id', '=', r.deliveryId)
        .where('leased_by', '=', workerId)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      if (Number(u.numUpdatedRows) !== 1) continue;
      if (r.attempt === null) continue;
      await db
        .insertInto('delivery_attempts')
        .values({ delivery_id: r.deliveryId, ...r.attempt })
        .execute();
      written.push(r);
    }
    return written;
  },

  /** Deliveries waiting for an attempt, across every workspace (the metrics' queue depth). */
  async pendingCount(db: Db): Promise<number> {
    const r = await db
      .selectFrom('deliveries')
      .where('status', '=', 'pending')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    return Number(r.n);
  },

  findByEvent(db: Db, eventId: string): Promise<DeliveriesTable | undefined> {
    return db.selectFrom('deliveries').selectAll().where('event_id', '=', eventId).executeTakeFirst();
  },

  find(db: Db, webhookId: string, id: string): Promise<DeliveriesTable | undefined> {
    return db
      .selectFrom('deliveries')
      .selectAll()
      .where('id', '=', id)
      .where('webhook_id', '=', webhookId)
      .executeTakeFirst();
  },

  async detail(db: Db, row: DeliveriesTable): Promise<DeliveryDetail> {
    const attempts = await db
      .selectFrom('delivery_attempts')
      .select(['number', 'attempted_at', 'duration_ms', 'response_status', 'response_body', 'error', 'request_headers'])
      .where('delivery_id', '=', row.id)
      .orderBy('number')
      .execute();
    return {
      ...toDelivery(row),
      attempts: attempts.map(({ request_headers, ...a }) => ({
        ...a,
        request_headers: request_headers ? (JSON.parse(request_headers) as Record<string, string>) : null,
      })),
    };
  },

  /**
   * The delivery log of a workspace+environment across its endpoints, filtered. With `webhook_id`
   * (the caller has checked it is of this tenant) only that endpoint's indexes are read: the page and
   * its `meta.total` come from the index alone (migration 009).
   */
  listInScope(db: Db, tenant: Tenant, filter: DeliveryFilter, page: PageRequest) {
    return pageById(
      db,
      'deliveries',
      (eb) => {
        const conds = filter.webhook_id
          ? []
          : [eb('workspace_id', '=', tenant.workspaceId), eb('env', '=', tenant.env)];
        if (filter.status) conds.push(eb('status', '=', filter.status));
        if (filter.webhook_id) conds.push(eb('webhook_id', '=', filter.webhook_id));
        if (filter.event) conds.push(eb('event_type', '=', filter.event));
        if (filter.created_after) conds.push(eb('created_at', '>', filter.created_after));
        if (filter.created_before) conds.push(eb('created_at', '<', filter.created_before));
        return eb.and(conds);
      },
      page,
    );
  },

  /**
   * Deliveries of a workspace+environment counted per state in each of the consecutive periods that
   * start at `starts` (the last ends at `end`). One index range count per period and state through
   * (workspace_id, env, status, created_at) (migration 009): a few milliseconds for 100,000
   * deliveries, where a GROUP BY over the hour of each row costs ten times as much.
   */
  async periodCounts(db: Db, dialect: Dialect, tenant: Tenant, starts: string[], end: string) {
    const ts = sql.raw(dialect.types.timestamp);
    const periods = sql.join(
      starts.map((start, i) => sql`(${start}, cast(${start} as ${ts}), cast(${starts[i + 1] ?? end} as ${ts}))`),
    );
    const count = (status: DeliveryStatus) => sql<number | string>`(select count(*) from deliveries d
      where d.workspace_id = ${tenant.workspaceId} and d.env = ${tenant.env} and d.status = ${status}
        and d.created_at >= p.from_at and d.created_at < p.to_at)`;
    const { rows } = await sql<{ start: string } & Record<DeliveryStatus, number | string>>`
      with p(start, from_at, to_at) as (values ${periods})
      select p.start, ${count('succeeded')} as succeeded, ${count('failed')} as failed,
        ${count('pending')} as pending, ${count('cancelled')} as cancelled
      from p order by p.start`.execute(db);
    return rows;
  },

  /** The newest `limit` failed deliveries of a workspace+environment, newest first. */
  latestFailed(db: Db, tenant: Tenant, limit: number): Promise<DeliveriesTable[]> {
    return db
      .selectFrom('deliveries')
      .selectAll()
      .where('workspace_id', '=', tenant.workspaceId)
      .where('env', '=', tenant.env)
      .where('status', '=', 'failed')
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
  },

  list(db: Db, webhookId: string, status: DeliveryStatus | undefined, page: PageRequest) {
    return pageById(
      db,
      'deliveries',
      (eb) => {
        const conds = [eb('webhook_id', '=', webhookId)];
        if (status) conds.push(eb('status', '=', status));
        return eb.and(conds);
      },
      page,
    );
  },

  /**
   * Bulk resend: every delivery of the webhook in `status` created at or after `since`, and not
   * being attempted right now, is due now again, in one statement. Returns how many.
   */
  async requeueMatching(
    db: WriteTx,
    webhookId: string,
    opts: { status: DeliveryStatus; since: string; now: string },
  ): Promise<number> {
    const r = await db
      .updateTable('deliveries')
      .set({ status: 'pending', next_attempt_at: opts.now, updated_at: opts.now, lease_until: null, leased_by: null })
      .where('webhook_id', '=', webhookId)
      .where('status', '=', opts.status)
      .where('created_at', '>=', opts.since)
      .execute();
    return r.reduce((n, x) => n + Number(x.numUpdatedRows), 0);
  },

  /** Cancels every pending delivery of the webhook (it was disabled); returns how many. */
  async cancelPending(db: WriteTx, webhookId: string, now: string): Promise<number> {
    const r = await db
      .updateTable('deliveries')
      .set({ status: 'cancelled', next_attempt_at: null, lease_until: null, leased_by: null, updated_at: now })
      .where('webhook_id', '=', webhookId)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  },

  /**
   * A deleted resource's pending deliveries go with its events (docs/api.md#resources); `eventIds`
   * is the events module's query of that resource's event ids.
   */
  async deletePendingOfEvents(db: WriteTx, eventIds: EventIdsQuery): Promise<void> {
    const pending = db
      .selectFrom('deliveries')
      .select('id')
      .where('event_id', 'in', eventIds)
      .where('status', '=', 'pending');
    await db.deleteFrom('delivery_attempts').where('delivery_id', 'in', pending).execute();
    await db.deleteFrom('deliveries').where('event_id', 'in', eventIds).where('status', '=', 'pending').execute();
  },

  /**
   * Deletes up to `limit` of the deliveries created before `cutoff`, with their attempts and exhausted marks (EVENT_RETENTION_DAYS,
   * docs/api.md#events); returns how many deliveries per workspace.
   */
  async purgeBefore(db: WriteTx, cutoff: string, limit = PURGE_BATCH_ROWS): Promise<Map<string, number>> {
    const rows = await db
      .selectFrom('deliveries')
      .select(['id', 'workspace_id', 'event_id'])
      .where('created_at', '<', cutoff)
      .limit(limit)
      .execute();
    if (rows.length === 0) return new Map();
    const ids = rows.map((r) => r.id);
    await db.deleteFrom('delivery_attempts').where('delivery_id', 'in', ids).execute();
    await db.deleteFrom('deliveries').where('id', 'in', ids).execute();
    // What said their events' deliveries used every retry goes with them.
    const eventIds = [...new Set(rows.map((r) => r.event_id))];
    await db.deleteFrom('exhausted_deliveries').where('event_id', 'in', eventIds).execute();
    return countByWorkspace(rows);
  },

  /**
   * Records that `eventId`'s delivery to `webhookId` used all its retries; false when that was already recorded
   * (a resend that failed again): `delivery.exhausted` is told once per event and endpoint.
   */
  async markExhausted(db: WriteTx, eventId: string, webhookId: string, at: string): Promise<boolean> {
    const r = await db
      .insertInto('exhausted_deliveries')
      .values({ event_id: eventId, webhook_id: webhookId, created_at: at })
      .onConflict((oc) => oc.columns(['event_id', 'webhook_id']).doNothing())
      .returning('event_id')
      .executeTakeFirst();
    return r !== undefined;
  },

  /** The deliveries `ids` as the worker just wrote them (what a `delivery.exhausted` event says). */
  exhaustedOf(db: Db, ids: string[]) {
    return ids.length === 0
      ? Promise.resolve([])
      : db
          .selectFrom('deliveries')
          .select([
            'id',
            'webhook_id',
            'event_id',
            'event_type',
            'workspace_id',
            'env',
            'attempt_count',
            'last_response_status',
          ])
          .where('id', 'in', ids)
          .orderBy('id')
          .execute();
  },

  /** Manual resend: the delivery is due now again (one more attempt, whatever its state). */
  async requeue(db: WriteTx, id: string, now: string): Promise<void> {
    await db
      .updateTable('deliveries')
      .set({ status: 'pending', next_attempt_at: now, updated_at: now })
      .where('id', '=', id)
      .execute();
  },
};

/**
 * The only events delivered while their workspace is scheduled for deletion (docs/data-lifecycle.md#deleting-a-workspace):
 * every other delivery of that workspace is held, and resumes if the deletion is cancelled.
 */
const DELIVERED_WHILE_DELETING = ['workspace.deletion_scheduled', 'workspace.deletion_cancelled'];

/** How many due rows one claim looks at, per free slot (endpoints at their cap are not among them). */
const SCAN_PER_SLOT = 8;

/**
 * The ids to claim, in the order to attempt them. Among the oldest due, unleased deliveries of
 * endpoints below their cap: rank each endpoint's rows (oldest first) and keep those that fit in
 * its remaining room, then rank within each workspace by that, and take the first `limit` by
 * workspace rank: every workspace's first delivery, then every workspace's second, and so on.
 * Standard window functions, the same SQL on SQLite and PostgreSQL.
 */
async function fairCandidates(
  db: Db,
  opts: { now: string; limit: number; perEndpoint: number; busy: ReadonlyMap<string, number> },
): Promise<string[]> {
  const busy = [...opts.busy].filter(([, n]) => n > 0);
  const full = busy.filter(([, n]) => n >= opts.perEndpoint).map(([id]) => id);
  const partly = busy.filter(([, n]) => n < opts.perEndpoint);
  const inFlight =
    partly.length === 0
      ? sql<number>`0`
      : sql<number>`case webhook_id ${sql.join(
          partly.map(([id, n]) => sql`when ${id} then ${n}`),
          sql` `,
        )} else 0 end`;
  const notFull = full.length === 0 ? sql`` : sql`and webhook_id not in (${sql.join(full)})`;
  const scan = Math.max(100, opts.limit * SCAN_PER_SLOT);
  const { rows } = await sql<{ id: string }>`
    with due as (
      select id, webhook_id, workspace_id, next_attempt_at from deliveries
      where status = 'pending' and next_attempt_at <= ${opts.now}
        and (lease_until is null or lease_until < ${opts.now}) ${notFull}
        and (event_type in (${sql.join(DELIVERED_WHILE_DELETING)})
          or workspace_id not in (select id from workspaces where deletion_scheduled_at is not null))
      order by next_attempt_at, id
      limit ${scan}
    ),
    per_endpoint as (
      select id, workspace_id, next_attempt_at,
        row_number() over (partition by webhook_id order by next_attempt_at, id) + ${inFlight} as endpoint_rank
      from due
    ),
    per_workspace as (
      select id, next_attempt_at, endpoint_rank,
        row_number() over (partition by workspace_id order by endpoint_rank, next_attempt_at, id) as workspace_rank
      from per_endpoint
      where endpoint_rank <= ${opts.perEndpoint}
    )
    select id from per_workspace
    order by workspace_rank, endpoint_rank, next_attempt_at, id
    limit ${opts.limit}
  `.execute(db);
  return rows.map((r) => r.id);
}
