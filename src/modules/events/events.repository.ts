import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../db/dialect.js';
import { batchAfterId, findInScope, pageById } from '../../db/keyset.js';
import { type Param, prepared } from '../../db/prepared.js';
import type { EventsTable, ReceiverVersionsTable } from '../../db/types.js';
import type { Env } from '../../kernel/environments.js';
import type { Tenant } from '../../kernel/principal.js';
import type { PageRequest } from '../../lib/paging.js';
import { countByWorkspace, PURGE_BATCH_ROWS } from '../../platform/batched-purge.js';
import type { WriteTx } from '../../platform/unit-of-work.js';
import type { Event, ListEventsFilter } from './events.schemas.js';

/** A workspace's receivers' token (`receiver_versions`); null while none was written. */
export type ReceiversVersion = string | null;

/** Row → API object: the stored payload is the event object itself (docs/api.md#webhook-deliveries). */
export function toEvent(row: Pick<EventsTable, 'payload'>): Event {
  return JSON.parse(row.payload) as Event;
}

// Performance (docs/performance.md#queries-built-once): every resource write runs this; built and compiled once (src/db/prepared.ts).
// It also returns the workspace's receivers' token (docs/performance.md, "The receivers of an event, cached"),
// read by the same statement: the outbox's fan-out knows whether the receivers it holds are current.
const insertEvent = (db: Db, $: Param<EventsTable>) =>
  db.insertInto('events').values({
    id: $('id'),
    workspace_id: $('workspace_id'),
    env: $('env'),
    type: $('type'),
    resource_id: $('resource_id'),
    payload: $('payload'),
    created_at: $('created_at'),
  });
const insertQuery = prepared((db, $: Param<EventsTable>) =>
  insertEvent(db, $).returning((eb) =>
    eb.selectFrom('receiver_versions').select('version').where('workspace_id', '=', $('workspace_id')).as('receivers'),
  ),
);

// The same insert without the token, for a write that expects it (`insertExpecting`): sent with the write's other
// deferred statements, and the token asserted by `wsvc_expect_receivers` (migration 027, PostgreSQL).
const insertOnlyQuery = prepared((db, $: Param<EventsTable>) => insertEvent(db, $));
const expectReceiversQuery = prepared((db, $: Param<{ workspace_id: string; version: ReceiversVersion }>) => ({
  compile: () => sql`select wsvc_expect_receivers(${$('workspace_id')}, ${$('version')})`.compile(db),
}));

const receiversChangedQuery = prepared((db, $: Param<ReceiverVersionsTable>) =>
  db
    .insertInto('receiver_versions')
    .values({ workspace_id: $('workspace_id'), version: $('version') })
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet({ version: $('version') })),
);

/** SQL of the events table (its only owner); reads are confined to one workspace and environment (docs/api.md#environments). */
export const eventsRepository = {
  /** A batch of the workspace's rows after `afterId`, oldest first (an export's keyset walk). */
  exportBatch: (db: Db, workspaceId: string, env: Env, afterId: string | null, limit: number) =>
    batchAfterId(db, 'events', workspaceId, afterId, limit, { env }),
  /**
   * Writes one event; returns its workspace's receivers' token as this statement sees it (null: never
   * changed), so the webhooks and integrations it fans out to can be taken from a cache kept under it.
   */
  async insert(db: WriteTx, row: EventsTable): Promise<ReceiversVersion> {
    const { rows } = await insertQuery.execute(db, row);
    return rows[0]?.receivers ?? null;
  },

  /**
   * Writes one event whose workspace's receivers' token the caller expects to be `expected` (the token it holds
   * them under), where the dialect defers (`Dialect.defers`, PostgreSQL) only: the insert and the assertion are
   * sent with the transaction's next statement or its COMMIT, and the transaction fails with RECEIVERS_MOVED_CODE
   * (dialect.ts) if the token, read when the assertion runs, is another.
   */
  async insertExpecting(db: WriteTx, row: EventsTable, expected: ReceiversVersion): Promise<void> {
    await insertOnlyQuery.later(db, row);
    await expectReceiversQuery.later(db, { workspace_id: row.workspace_id, version: expected });
  },

  /**
   * Gives the workspace's receivers a new token, in `db` (the transaction of a change to its webhooks or
   * integrations): every process's cached receivers of the workspace stop holding once it commits.
   */
  async receiversChanged(db: WriteTx, workspaceId: string): Promise<void> {
    await receiversChangedQuery.execute(db, {
      workspace_id: workspaceId,
      version: randomBytes(12).toString('base64url'),
    });
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

  /**
   * Deletes up to `limit` of the events created before `cutoff` (EVENT_RETENTION_DAYS, docs/api.md#events);
   * returns how many per workspace.
   */
  async purgeBefore(db: WriteTx, cutoff: string, limit = PURGE_BATCH_ROWS): Promise<Map<string, number>> {
    const rows = await db
      .selectFrom('events')
      .select(['id', 'workspace_id'])
      .where('created_at', '<', cutoff)
      .limit(limit)
      .execute();
    if (rows.length === 0) return new Map();
    await db
      .deleteFrom('events')
      .where(
        'id',
        'in',
        rows.map((r) => r.id),
      )
      .execute();
    return countByWorkspace(rows);
  },
};
