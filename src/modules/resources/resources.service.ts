import { type Db, writeJson } from '../../db/dialect.js';
import type { ResourcesTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../lib/clock.js';
import { NotFoundError } from '../../lib/errors.js';
import { isId, newId } from '../../lib/ids.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import type { Actor, WriteRunner } from '../keys/actor.js';
import { resourcesRepository as repo, toResource } from './resources.repository.js';
import type { CreateResourceInput, ListResourcesFilter, Resource, UpdateResourceInput } from './resources.schemas.js';

const scopeOf = (a: Actor) => ({ workspaceId: a.workspaceId, env: a.env });

/** The rules of resources: create, read, list, replace name/metadata, archive (D13), delete (D15). */
export function createResourcesService(deps: { db: Db; clock: Clock; writeAs: WriteRunner }) {
  const { db, clock, writeAs } = deps;

  async function findOrThrow(trx: Db, actor: Actor, id: string): Promise<ResourcesTable> {
    const row = isId('resource', id) ? await repo.find(trx, scopeOf(actor), id) : undefined;
    if (!row) throw new NotFoundError('resource');
    return row;
  }

  /** Creates an active resource. */
  async function create(actor: Actor, input: CreateResourceInput): Promise<Resource> {
    return writeAs(actor, async (trx) => {
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
      return toResource(row);
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
    return writeAs(actor, async (trx) => {
      const before = await findOrThrow(trx, actor, id);
      const set: Partial<ResourcesTable> = {};
      if (input.name !== undefined) set.name = input.name;
      if (input.metadata !== undefined) set.metadata = writeJson(input.metadata);
      if (Object.keys(set).length === 0) return toResource(before);
      set.updated_at = isoAt(Math.max(clock.now(), Date.parse(before.updated_at)));
      await repo.update(trx, scopeOf(actor), id, set);
      return toResource({ ...before, ...set } as ResourcesTable);
    });
  }

  /** D13: sets status; repeating a transition answers the resource unchanged. */
  async function setStatus(actor: Actor, id: string, status: Resource['status']): Promise<Resource> {
    return writeAs(actor, async (trx) => {
      const before = await findOrThrow(trx, actor, id);
      if (before.status === status) return toResource(before);
      const updated_at = isoAt(Math.max(clock.now(), Date.parse(before.updated_at)));
      await repo.update(trx, scopeOf(actor), id, { status, updated_at });
      return toResource({ ...before, status, updated_at });
    });
  }

  /** D15: deletes the resource; a second delete is NotFoundError. */
  async function remove(actor: Actor, id: string): Promise<void> {
    await writeAs(actor, async (trx) => {
      await findOrThrow(trx, actor, id);
      await repo.delete(trx, scopeOf(actor), id);
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
