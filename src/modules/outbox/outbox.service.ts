import { type Db, type Dialect, readJson } from '../../db/dialect.js';
import type { DeliveriesTable, EventsTable } from '../../db/types.js';
import { isoAt } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { Tenant } from '../../lib/principal.js';
import type { Signal } from '../../lib/signal.js';
import { deliveryRepository } from '../delivery/delivery.repository.js';
import { eventsRepository } from '../events/events.repository.js';
import type { Event, EventType } from '../events/events.schemas.js';

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
    const hooks = await deliveryRepository.subscribers(trx, tenant);
    const deliveries: DeliveriesTable[] = hooks
      .filter((h) => {
        const events = readJson<string[]>(h.events);
        return events.includes('*') || events.includes(type);
      })
      .map((h) => ({
        id: newId('delivery', now),
        webhook_id: h.id,
        event_id: id,
        event_type: type,
        workspace_id: tenant.workspaceId,
        env: tenant.env,
        status: 'pending',
        attempt_count: 0,
        next_attempt_at: createdAt,
        lease_until: null,
        leased_by: null,
        last_response_status: null,
        last_error: null,
        created_at: createdAt,
        updated_at: createdAt,
      }));
    await deliveryRepository.insertMany(trx, deliveries);
    if (deliveries.length > 0) await dialect.notifyOnCommit?.(trx);
    return deliveries.length;
  }

  /** To call after the transaction that recorded events commits: wakes this process's worker. */
  function committed(queued: number): void {
    if (queued > 0) deliveriesDue.notify();
  }

  return { record, committed };
}
export type Outbox = ReturnType<typeof createOutbox>;
