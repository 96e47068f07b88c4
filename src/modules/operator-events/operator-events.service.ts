import type { Db, Dialect } from '../../db/dialect.js';
import type { OperatorDeliveriesTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { ConflictError, NotFoundError } from '../../kernel/errors.js';
import type { OperatorEventType } from '../../kernel/event-types.js';
import { newId } from '../../kernel/ids.js';
import type { SystemActor } from '../../kernel/principal.js';
import type { Signal } from '../../lib/signal.js';
import type { Change, Subscriber, Unit } from '../../platform/unit-of-work.js';
import type { AttemptResult, ClaimedDelivery } from '../delivery-engine/claims.js';
import type { DeliveryClaim } from '../delivery-engine/delivery.worker.js';
import { operatorEventsRepository as repo } from './operator-events.repository.js';
import type { OperatorEventDataOf } from './operator-events.schemas.js';

/** The `webhook_id` of an operator delivery's claim: the worker counts its attempts in flight under it. */
export const OPERATOR_RECEIVER = 'operator';

/** An operator delivery as `wsvc operator deliveries` shows it. */
export interface OperatorDelivery {
  id: string;
  event_id: string;
  event: OperatorEventType;
  workspace_id: string;
  status: OperatorDeliveriesTable['status'];
  attempt_count: number;
  last_response_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  created_at: string;
}

function toDelivery(r: OperatorDeliveriesTable): OperatorDelivery {
  return {
    id: r.id,
    event_id: r.event_id,
    event: r.event_type,
    workspace_id: r.workspace_id,
    status: r.status,
    attempt_count: Number(r.attempt_count),
    last_response_status: r.last_response_status === null ? null : Number(r.last_response_status),
    last_error: r.last_error,
    next_attempt_at: r.status === 'pending' ? r.next_attempt_at : null,
    created_at: r.created_at,
  };
}

/**
 * Operator events (docs/api.md#operator-events): a subscriber that writes, in the transaction of the change that
 * causes it, one delivery of `workspace.created`, `workspace.deleted`, `invoice.payment_failed` and
 * `subscription.unpaid` to the operator's receiver, and the delivery worker's source of those deliveries (claimed in
 * the same cycle as the endpoints', signed and retried the same way). Without a receiver nothing is written.
 */
export function createOperatorEvents(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  deliveriesDue: Signal;
  /** OPERATOR_WEBHOOK_URL and OPERATOR_WEBHOOK_SECRET; undefined: no operator events. */
  receiver: { url: string; secret: string } | undefined;
  /** How many days operator deliveries are kept (EVENT_RETENTION_DAYS). */
  retentionDays: number;
}) {
  const { dialect, receiver } = deps;

  async function record<T extends OperatorEventType>(
    c: Change,
    type: T,
    at: string,
    workspaceId: string,
    data: OperatorEventDataOf<T>,
  ): Promise<void> {
    const now = Date.parse(at);
    const createdAt = isoAt(now);
    const eventId = newId('event', now);
    await repo.insert(c.trx, {
      id: newId('operatorDelivery', now),
      event_id: eventId,
      event_type: type,
      workspace_id: workspaceId,
      payload: JSON.stringify({ id: eventId, event: type, created_at: createdAt, data }),
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: createdAt,
      lease_until: null,
      leased_by: null,
      last_response_status: null,
      last_error: null,
      created_at: createdAt,
      updated_at: createdAt,
    });
    await dialect.notifyOnCommit?.(c.trx);
    c.afterCommit(() => deps.deliveriesDue.notify());
  }

  /** Registered in src/services.ts; reacts to nothing without a receiver. */
  const subscriber: Subscriber = {
    name: 'operator events',
    on: receiver
      ? {
          'workspace.created': (c, e) =>
            record(c, 'workspace.created', e.at, e.workspaceId, { workspace_id: e.workspaceId, name: e.name }),
          'workspace.deleted': (c, e) =>
            record(c, 'workspace.deleted', e.at, e.workspaceId, { workspace_id: e.workspaceId }),
          'invoice.payment_failed': (c, e) => {
            const { at, invoice_id, number, plan, total_cents, currency, period_start, period_end } = e.data;
            return record(c, 'invoice.payment_failed', at, e.workspaceId, {
              workspace_id: e.workspaceId,
              invoice_id,
              number,
              plan,
              total_cents,
              currency,
              period_start,
              period_end,
              failed_at: at,
            });
          },
          'subscription.unpaid': (c, e) =>
            record(c, 'subscription.unpaid', e.at, e.workspaceId, {
              workspace_id: e.workspaceId,
              invoice_id: e.invoiceId,
            }),
        }
      : {},
  };

  /**
   * The delivery worker's cycle for operator deliveries, joining the worker's change (`u`): writes the outcomes of
   * the attempts finished, then claims due ones within the receiver's free slots (WEBHOOK_ENDPOINT_CONCURRENCY).
   */
  function workerCycle(
    u: Unit,
    workerId: string,
    outcomes: AttemptResult[],
    claim: DeliveryClaim,
  ): Promise<ClaimedDelivery[]> {
    return u.run(async ({ trx }) => {
      if (outcomes.length > 0) await repo.complete(trx, workerId, outcomes, claim.now);
      if (!receiver) return [];
      const room = Math.min(claim.limit, claim.perEndpoint - (claim.busy.get(OPERATOR_RECEIVER) ?? 0));
      const rows = await repo.claim(trx, { ...claim, workerId, limit: room });
      return rows.map((r) => ({
        id: r.id,
        attempt_count: Number(r.attempt_count),
        webhook_id: OPERATOR_RECEIVER,
        workspace_id: r.workspace_id,
        webhook_status: 'enabled' as const,
        url: receiver.url,
        secret: receiver.secret,
        previous_secret: null,
        previous_secret_expires_at: null,
        event_id: r.event_id,
        event_type: r.event_type,
        payload: r.payload,
      }));
    });
  }

  /** The newest `limit` operator deliveries, newest first (`wsvc operator deliveries`). */
  async function list(limit: number): Promise<OperatorDelivery[]> {
    return (await repo.list(deps.db, limit)).map(toDelivery);
  }

  /**
   * `wsvc operator retry`: a delivery that is not pending is due now again, for one more attempt; the workers are
   * woken at the commit. NotFoundError for an unknown id, ConflictError for one already pending.
   */
  function retry(u: Unit<SystemActor>, id: string): Promise<OperatorDelivery> {
    return u.run(async (c) => {
      const row = await repo.find(c.trx, id);
      if (!row) throw new NotFoundError('operator delivery');
      if (row.status === 'pending') {
        throw new ConflictError('delivery_pending', `Operator delivery ${id} is already queued.`);
      }
      const now = isoAt(deps.clock.now());
      await repo.requeue(c.trx, id, now);
      await dialect.notifyOnCommit?.(c.trx);
      c.afterCommit(() => deps.deliveriesDue.notify());
      return toDelivery((await repo.find(c.trx, id)) as OperatorDeliveriesTable);
    });
  }

  /** The retention job: deletes operator deliveries older than EVENT_RETENTION_DAYS, 1000 a change. */
  async function purgeExpired(u: Unit<SystemActor>): Promise<number> {
    const cutoff = isoAt(deps.clock.now() - deps.retentionDays * 86_400_000);
    let total = 0;
    for (;;) {
      const n = await u.run(({ trx }) => repo.purgeBefore(trx, cutoff, 1000));
      total += n;
      if (n < 1000) return total;
    }
  }

  return { subscriber, workerCycle, list, retry, purgeExpired, receiver: OPERATOR_RECEIVER };
}
export type OperatorEvents = ReturnType<typeof createOperatorEvents>;
