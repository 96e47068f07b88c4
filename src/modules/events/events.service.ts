import { type Db, type Dialect, readJson } from '../../db/dialect.js';
import type { DeliveriesTable, EventsTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../lib/clock.js';
import { NotFoundError } from '../../lib/errors.js';
import { isId, newId } from '../../lib/ids.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import { type Principal, type Tenant, tenantOf } from '../../lib/principal.js';
import type { Signal } from '../../lib/signal.js';
import { deliveryRepository } from '../delivery/delivery.repository.js';
import { webhooksRepository } from '../webhooks/webhooks.repository.js';
import { eventsRepository as repo, toEvent } from './events.repository.js';
import type { Event, EventType, ListEventsFilter } from './events.schemas.js';

/** Events are readable, and purged after, this long (D17). */
export const EVENT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * The D17 transactional outbox and the events API. `record` runs inside the caller's transaction:
 * the event row and one delivery per subscribed webhook commit with the change, or not at all.
 */
export function createEventsService(deps: { db: Db; dialect: Dialect; clock: Clock; deliveriesDue: Signal }) {
  const { db, dialect, clock, deliveriesDue } = deps;

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
    await repo.insert(trx, row);
    const hooks = await webhooksRepository.listEnabled(trx, tenant);
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

  async function get(principal: Principal, id: string): Promise<Event> {
    const row = isId('event', id) ? await repo.find(db, tenantOf(principal), id) : undefined;
    if (!row) throw new NotFoundError('event');
    return toEvent(row);
  }

  async function list(principal: Principal, filter: ListEventsFilter, page: PageRequest): Promise<Page<Event>> {
    const p = await repo.list(db, tenantOf(principal), filter, page);
    return { ...p, items: p.items.map(toEvent) };
  }

  /** Deletes events and delivery logs older than 30 days; returns the number of events removed. */
  function purgeExpired(): Promise<number> {
    const cutoff = isoAt(clock.now() - EVENT_RETENTION_MS);
    return dialect.writeTransaction(db, (trx) => repo.purgeBefore(trx, cutoff), { keepsKeys: true });
  }

  return { record, committed, get, list, purgeExpired, purgeResource: repo.purgeResource };
}
export type EventsService = ReturnType<typeof createEventsService>;
