import type { Db, Dialect } from '../../db/dialect.js';
import { type Clock, isoAt } from '../../lib/clock.js';
import { NotFoundError } from '../../lib/errors.js';
import { isId } from '../../lib/ids.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import { type Principal, tenantOf } from '../../lib/principal.js';
import { eventsRepository as repo, toEvent } from './events.repository.js';
import type { Event, ListEventsFilter } from './events.schemas.js';

/** Events are readable, and purged after, this long (docs/api.md#events). */
export const EVENT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/** The events API (docs/api.md#events) and the events' retention; events are written by the outbox module. */
export function createEventsService(deps: { db: Db; dialect: Dialect; clock: Clock }) {
  const { db, dialect, clock } = deps;

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

  return { get, list, purgeExpired, purgeResource: repo.purgeResource };
}
export type EventsService = ReturnType<typeof createEventsService>;
