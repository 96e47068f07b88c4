import type { Db } from '../../db/dialect.js';
import { pageById } from '../../db/keyset.js';
import { type Param, prepared } from '../../db/prepared.js';
import { withRowLockSkipping } from '../../db/row-locks.js';
import type { DeliveriesTable, DeliveryAttemptsTable, DeliveryStatus, WebhooksTable } from '../../db/types.js';
import type { PageRequest } from '../../lib/paging.js';
import type { Tenant } from '../../lib/principal.js';
import type { Delivery, DeliveryDetail } from './delivery.schemas.js';

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

/** What a worker needs to make one attempt: the claim, the webhook's address and secret, the body. */
export interface ClaimedDelivery {
  id: string;
  attempt_count: number;
  url: string;
  secret: string;
  event_id: string;
  payload: string;
}

/** The outcome of one attempt, written back by the worker that holds the lease. */
export interface AttemptResult {
  deliveryId: string;
  attempt: Omit<DeliveryAttemptsTable, 'delivery_id'>;
  /** The delivery's state after this attempt. */
  status: DeliveryStatus;
  nextAttemptAt: string | null;
}

// Performance (docs/performance.md, change 2): every resource write reads this (the outbox fan-out); built and compiled once.
const enabledQuery = prepared((db, $: Param<Tenant>) =>
  db
    .selectFrom('webhooks')
    .select(['id', 'events'])
    .where('workspace_id', '=', $('workspaceId'))
    .where('env', '=', $('env'))
    .where('status', '=', 'enabled')
    .orderBy('id'),
);

/** SQL of the delivery log and of the workers' claims (docs/api.md#webhook-deliveries, #deployment). */
export const deliveryRepository = {
  /** The enabled webhooks an event of this tenant fans out to (≤ 16, docs/api.md#webhooks). */
  async subscribers(db: Db, tenant: Tenant): Promise<Pick<WebhooksTable, 'id' | 'events'>[]> {
    return (await enabledQuery.execute(db, tenant)).rows;
  },

  insertMany(db: Db, rows: DeliveriesTable[]) {
    return rows.length === 0 ? Promise.resolve() : db.insertInto('deliveries').values(rows).execute();
  },

  /**
   * Claims up to `limit` due deliveries for `workerId` until `leaseUntil`: pending, due, and not
   * leased by a live worker. Concurrent workers skip each other's rows (withRowLockSkipping, docs/api.md#deployment).
   */
  async claim(
    db: Db,
    opts: { now: string; leaseUntil: string; workerId: string; limit: number },
  ): Promise<ClaimedDelivery[]> {
    const due = withRowLockSkipping(
      db,
      db
        .selectFrom('deliveries')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', opts.now)
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', opts.now)]))
        .orderBy('next_attempt_at')
        .orderBy('id')
        .limit(opts.limit),
    );
    const claimed = await db
      .updateTable('deliveries')
      .set({ lease_until: opts.leaseUntil, leased_by: opts.workerId })
      .where('id', 'in', due)
      .returning(['id', 'attempt_count', 'webhook_id', 'event_id'])
      .execute();
    if (claimed.length === 0) return [];
    const details = await db
      .selectFrom('deliveries as d')
      .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
      .innerJoin('events as e', 'e.id', 'd.event_id')
      .select(['d.id', 'd.attempt_count', 'w.url', 'w.secret', 'e.id as event_id', 'e.payload'])
      .where(
        'd.id',
        'in',
        claimed.map((c) => c.id),
      )
      .orderBy('d.next_attempt_at')
      .orderBy('d.id')
      .execute();
    return details;
  },

  /**
   * Writes attempts back, each only if `workerId` still holds the claim (a delivery cancelled or
   * taken over meanwhile is left alone). Returns how many were written.
   */
  async complete(db: Db, workerId: string, results: AttemptResult[], now: string): Promise<number> {
    let written = 0;
    for (const r of results) {
      const u = await db
        .updateTable('deliveries')
        .set((eb) => ({
          status: r.status,
          attempt_count: eb('attempt_count', '+', 1),
          next_attempt_at: r.nextAttemptAt,
          lease_until: null,
          leased_by: null,
          last_response_status: r.attempt.response_status,
          last_error: r.attempt.error,
          updated_at: now,
        }))
        .where('id', '=', r.deliveryId)
        .where('leased_by', '=', workerId)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      if (Number(u.numUpdatedRows) !== 1) continue;
      await db
        .insertInto('delivery_attempts')
        .values({ delivery_id: r.deliveryId, ...r.attempt })
        .execute();
      written++;
    }
    return written;
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
      .select(['number', 'attempted_at', 'duration_ms', 'response_status', 'response_body', 'error'])
      .where('delivery_id', '=', row.id)
      .orderBy('number')
      .execute();
    return { ...toDelivery(row), attempts };
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

  /** Manual resend: the delivery is due now again (one more attempt, whatever its state). */
  async requeue(db: Db, id: string, now: string): Promise<void> {
    await db
      .updateTable('deliveries')
      .set({ status: 'pending', next_attempt_at: now, updated_at: now })
      .where('id', '=', id)
      .execute();
  },
};
