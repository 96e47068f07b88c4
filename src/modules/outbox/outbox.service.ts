import { type Db, type Dialect, readJson } from '../../db/dialect.js';
import type { DeliveriesTable, EventsTable } from '../../db/types.js';
import { isoAt } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { Tenant } from '../../lib/principal.js';
import type { Signal } from '../../lib/signal.js';
import { deliveryRepository } from '../delivery/delivery.repository.js';
import { eventsRepository } from '../events/events.repository.js';
import { type AnyEventType, type Event, type EventType, TEST_EVENT_TYPE } from '../events/events.schemas.js';

/**
 * The transactional outbox (docs/api.md#events): `record` runs inside the caller's transaction, so the event row and
 * one delivery per subscribed webhook commit with the change, or not at all.
 */
export function createOutbox(deps: { dialect: Dialect; deliveriesDue: Signal }) {
  const { dialect, deliveriesDue } = deps;

  /** Writes an event and its deliveries in `trx`; returns how many deliveries it queued. */
  async function record(
    trx: Db,
    tenant: Tenant,
    type: EventType,
    resourceId: string | null,
    data: Event['data'],
    now: number,
  ): Promise<number> {
    const event = await insertEvent(trx, tenant, type, resourceId, data, now);
    const hooks = await deliveryRepository.subscribers(trx, tenant);
    const targets = hooks
      .filter((h) => {
        const events = readJson<string[]>(h.events);
        return events.includes('*') || events.includes(type);
      })
      .map((h) => h.id);
    return queue(trx, tenant, event, targets, now);
  }

  /**
   * Writes a `webhook.test` event and its one delivery, to `webhookId` only (no subscription
   * includes it); returns the delivery row. The caller rings `committed(1)` after its commit.
   */
  async function recordTest(trx: Db, tenant: Tenant, webhookId: string, now: number): Promise<DeliveriesTable> {
    const data = { webhook_id: webhookId, message: 'This is a test event sent from the API.' };
    const event = await insertEvent(trx, tenant, TEST_EVENT_TYPE, null, data, now);
    await queue(trx, tenant, event, [webhookId], now);
    return (await deliveryRepository.findByEvent(trx, event.id)) as DeliveriesTable;
  }

  async function insertEvent(
    trx: Db,
    tenant: Tenant,
    type: AnyEventType,
    resourceId: string | null,
    data: Event['data'],
    now: number,
  ): Promise<EventsTable> {
    const createdAt = isoAt(now);
    const id = newId('event', now);
    const payload = JSON.stringify({ id, event: type, created_at: createdAt, data });
    const row: EventsTable = {
      id,
      workspace_id: tenant.workspaceId,
      env: tenant.env,
      type,
      resource_id: resourceId,
      payload,
      created_at: createdAt,
    };
    await eventsRepository.insert(trx, row);
    return row;
  }

  async function queue(trx: Db, tenant: Tenant, event: EventsTable, webhookIds: string[], now: number) {
    const deliveries: DeliveriesTable[] = webhookIds.map((webhookId) => ({
      id: newId('delivery', now),
      webhook_id: webhookId,
      event_id: event.id,
      event_type: event.type,
      workspace_id: tenant.workspaceId,
      env: tenant.env,
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: event.created_at,
      lease_until: null,
      leased_by: null,
      last_response_status: null,
      last_error: null,
      created_at: event.created_at,
      updated_at: event.created_at,
    }));
    await deliveryRepository.insertMany(trx, deliveries);
    if (deliveries.length > 0) await dialect.notifyOnCommit?.(trx);
    return deliveries.length;
  }

  /** To call after the transaction that recorded events commits: wakes this process's worker. */
  function committed(queued: number): void {
    if (queued > 0) deliveriesDue.notify();
  }

  return { record, recordTest, committed };
}
export type Outbox = ReturnType<typeof createOutbox>;
