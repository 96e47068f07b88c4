import type { Db } from '../../db/dialect.js';
import type { Env } from '../../kernel/environments.js';
import { NotFoundError } from '../../kernel/errors.js';
import { isId } from '../../kernel/ids.js';
import { type Principal, tenantOf } from '../../kernel/principal.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import { eventsRepository as repo, toEvent } from './events.repository.js';

export type { ReceiversVersion } from './events.repository.js';

import type { Event, ListEventsFilter } from './events.schemas.js';

/** The events API (docs/api.md#events) and the events table's SQL; the webhooks module's outbox writes and purges through it. */
export function createEventsService(deps: { db: Db }) {
  const { db } = deps;

  async function get(principal: Principal, id: string): Promise<Event> {
    const row = isId('event', id) ? await repo.find(db, tenantOf(principal), id) : undefined;
    if (!row) throw new NotFoundError('event');
    return toEvent(row);
  }

  async function list(principal: Principal, filter: ListEventsFilter, page: PageRequest): Promise<Page<Event>> {
    const p = await repo.list(db, tenantOf(principal), filter, page);
    return { ...p, items: p.items.map(toEvent) };
  }

  return {
    /** A batch of the workspace's events after `after` (an id; null: from the first), oldest first: an export's walk. */
    exportBatch: async (workspaceId: string, env: Env, after: string | null, limit: number) => {
      const rows = await repo.exportBatch(db, workspaceId, env, after, limit);
      return { rows: rows.map((r) => ({ ...toEvent(r), env: r.env })), next: rows.at(-1)?.id ?? null };
    },
    get,
    list,
    /**
     * Writes one event row in the caller's write transaction (the outbox, webhooks/outbox.ts); returns its
     * workspace's receivers' token, read by the same statement.
     */
    insert: repo.insert,
    /** An event's insert sent later, asserting its workspace's receivers' token (PostgreSQL; see the repository). */
    insertExpecting: repo.insertExpecting,
    /** Replaces the workspace's receivers' token in `trx`: called by every change to its webhooks or integrations. */
    receiversChanged: repo.receiversChanged,
    resourceEventIds: repo.resourceEventIds,
    deleteForResource: repo.deleteForResource,
    purgeBefore: repo.purgeBefore,
  };
}
export type EventsService = ReturnType<typeof createEventsService>;
