import { type Db, writeJson } from '../../db/dialect.js';
import type { ResourcesTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../lib/clock.js';
import { NotFoundError } from '../../lib/errors.js';
import { isId, newId } from '../../lib/ids.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import type { Event, EventType } from '../events/events.schemas.js';
import type { EventsService } from '../events/events.service.js';
import type { Actor, WriteRunner } from '../keys/actor.js';
import { resourcesRepository as repo, toResource } from './resources.repository.js';
import type { CreateResourceInput, ListResourcesFilter, Resource, UpdateResourceInput } from './resources.schemas.js';

const scopeOf = (a: Actor) => ({ workspaceId: a.workspaceId, env: a.env });
type Emit = (type: EventType, resourceId: string, data: Event['data'], now: number) => Promise<void>;

/**
 * The rules of resources: create, read, list, replace name/metadata, archive, delete (docs/api.md#resources).
 * Every change records its event in the same transaction (outbox).
 */
export function createResourcesService(deps: { db: Db; clock: Clock; writeAs: WriteRunner; events: EventsService }) {
  const { db, clock, events } = deps;

  /** Runs a change as `actor`, then wakes the delivery worker if the change queued deliveries. */
  async function change<T>(actor: Actor, fn: (trx: Db, emit: Emit) => Promise<T>): Promise<T> {
    let queued = 0;
    const result = await deps.writeAs(actor, (trx) =>
      fn(trx, async (type, resourceId, data, now) => {
        queued += await events.record(trx, scopeOf(actor), type, resourceId, data, now);
      }),
    );
    events.committed(queued);
    return result;
  }

  async function findOrThrow(trx: Db, actor: Actor, id: string): Promise<ResourcesTable> {
    const row = isId('resource', id) ? await repo.find(trx, scopeOf(actor), id) : undefined;
    if (!row) throw new NotFoundError('resource');
    return row;
  }

  /** Creates an active resource. */
  async function create(actor: Actor, input: CreateResourceInput): Promise<Resource> {
    return change(actor, async (trx, emit) => {
      const now = clock.now();
      const row: ResourcesTable = {
        id: newId('resource', now),
        workspace_id: actor.workspaceId,
        env: actor.env,
        name: input.name,
        type: input.type,
        status: 'active',
        metadata: writeJson(input.metadata ?? {}),
        created_at: isoAt(now),
        updated_at: isoAt(now),
      };
      await repo.insert(trx, row);
      const resource = toResource(row);
      await emit('resource.created', row.id, { resource_id: row.id, resource }, now);
      return resource;
    });
  }

  /** One resource of the caller's workspace and environment; NotFoundError otherwise. */
  async function get(actor: Actor, id: string): Promise<Resource> {
    return toResource(await findOrThrow(db, actor, id));
  }

  async function list(actor: Actor, filter: ListResourcesFilter, page: PageRequest): Promise<Page<Resource>> {
    const p = await repo.list(db, scopeOf(actor), filter, page);
    return { ...p, items: p.items.map(toResource) };
  }

  /** PUT: replaces name and/or metadata; omitted fields keep their values. */
  async function update(actor: Actor, id: string, input: UpdateResourceInput): Promise<Resource> {
    return change(actor, async (trx, emit) => {
      const before = await findOrThrow(trx, actor, id);
      const set: Partial<ResourcesTable> = {};
      if (input.name !== undefined) set.name = input.name;
      if (input.metadata !== undefined) set.metadata = writeJson(input.metadata);
      if (Object.keys(set).length === 0) return toResource(before);
      const now = Math.max(clock.now(), Date.parse(before.updated_at));
      set.updated_at = isoAt(now);
      await repo.update(trx, scopeOf(actor), id, set);
      const old = toResource(before);
      const resource = toResource({ ...before, ...set } as ResourcesTable);
      await emit(
        'resource.updated',
        id,
        { resource_id: id, resource, previous_attributes: changed(old, resource) },
        now,
      );
      return resource;
    });
  }

  /** docs/api.md#resources: sets status; repeating a transition answers the resource unchanged. */
  async function setStatus(actor: Actor, id: string, status: Resource['status']): Promise<Resource> {
    return change(actor, async (trx, emit) => {
      const before = await findOrThrow(trx, actor, id);
      if (before.status === status) return toResource(before);
      const now = Math.max(clock.now(), Date.parse(before.updated_at));
      const updated_at = isoAt(now);
      await repo.update(trx, scopeOf(actor), id, { status, updated_at });
      const data = { resource_id: id, previous_status: before.status, current_status: status };
      await emit('resource.status_changed', id, data, now);
      return toResource({ ...before, status, updated_at });
    });
  }

  /** docs/api.md#resources: deletes the resource; a second delete is NotFoundError. */
  async function remove(actor: Actor, id: string): Promise<void> {
    await change(actor, async (trx, emit) => {
      await findOrThrow(trx, actor, id);
      await repo.delete(trx, scopeOf(actor), id);
      await events.purgeResource(trx, scopeOf(actor), id);
      // Written after the purge, so the deletion itself stays on record (id only, docs/api.md#resources).
      await emit('resource.deleted', id, { resource_id: id }, clock.now());
    });
  }

  return {
    create,
    get,
    list,
    update,
    archive: (actor: Actor, id: string) => setStatus(actor, id, 'archived'),
    unarchive: (actor: Actor, id: string) => setStatus(actor, id, 'active'),
    remove,
  };
}
export type ResourcesService = ReturnType<typeof createResourcesService>;

/** `previous_attributes`: the fields whose value changed, as they were before. */
function changed(before: Resource, after: Resource): { name?: string; metadata?: Record<string, string> } {
  const out: { name?: string; metadata?: Record<string, string> } = {};
  if (before.name !== after.name) out.name = before.name;
  if (JSON.stringify(before.metadata) !== JSON.stringify(after.metadata)) out.metadata = before.metadata;
  return out;
}
