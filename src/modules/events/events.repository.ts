import type { Db } from '../../db/dialect.js';
import { findInScope, pageById } from '../../db/keyset.js';
import { type Param, prepared } from '../../db/prepared.js';
import type { EventsTable } from '../../db/types.js';
import type { Tenant } from '../../kernel/principal.js';
import type { PageRequest } from '../../lib/paging.js';
import type { WriteTx } from '../auth/write-runner.js';
import type { Event, ListEventsFilter } from './events.schemas.js';

/** Row → API object: the stored payload is the event object itself (docs/api.md#webhook-deliveries). */
export function toEvent(row: Pick<EventsTable, 'payload'>): Event {
  return JSON.parse(row.payload) as Event;
}

// Performance (docs/performance.md, "Earlier changes" 2): every resource write runs this; built and compiled once (src/db/prepared.ts).
const insertQuery = prepared((db, $: Param<EventsTable>) =>
  db.insertInto('events').values({
    id: $('id'),
    workspace_id: $('workspace_id'),
    env: $('env'),
    type: $('type'),
    resource_id: $('resource_id'),
    payload: $('payload'),
    created_at: $('created_at'),
  }),
);

/** SQL of the events table (its only owner); reads are confined to one workspace and environment (docs/api.md#environments). */
export const eventsRepository = {
  async insert(db: WriteTx, row: EventsTable): Promise<void> {
    // Sent just before the transaction's next statement, or with its COMMIT, where the dialect defers (dialect.ts, `later`).
    await insertQuery.later(db, row);
  },

  find(db: Db, tenant: Tenant, id: string): Promise<EventsTable | undefined> {
    return findInScope(db, 'events', tenant, id);
  },

  list(db: Db, tenant: Tenant, filter: ListEventsFilter, page: PageRequest) {
    return pageById(
      db,
      'events',
      (eb) => {
        const conds = [eb('workspace_id', '=', tenant.workspaceId), eb('env', '=', tenant.env)];
        if (filter.event) conds.push(eb('type', '=', filter.event));
        if (filter.resource_id) conds.push(eb('resource_id', '=', filter.resource_id));
        return eb.and(conds);
      },
      page,
    );
  },

  /** The ids of a resource's events, as a subquery (a deleted resource's deliveries go with them). */
  resourceEventIds(db: Db, tenant: Tenant, resourceId: string) {
    return db
      .selectFrom('events')
      .select('id')
      .where('workspace_id', '=', tenant.workspaceId)
      .where('env', '=', tenant.env)
      .where('resource_id', '=', resourceId);
  },

  /** docs/api.md#resources: a deleted resource's events go with it (its pending deliveries first). */
  async deleteForResource(db: WriteTx, tenant: Tenant, resourceId: string): Promise<void> {
    await db
      .deleteFrom('events')
      .where('workspace_id', '=', tenant.workspaceId)
      .where('env', '=', tenant.env)
      .where('resource_id', '=', resourceId)
      .execute();
  },

  /** Deletes events created before `cutoff` (30-day retention, docs/api.md#events); returns how many. */
  async purgeBefore(db: WriteTx, cutoff: string): Promise<number> {
    const r = await db.deleteFrom('events').where('created_at', '<', cutoff).executeTakeFirst();
    return Number(r.numDeletedRows);
  },
};
