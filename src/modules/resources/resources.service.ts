import { type Db, writeJson } from '../../db/dialect.js';
import type { ResourcesTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import type { Env } from '../../kernel/environments.js';
import { NotFoundError } from '../../kernel/errors.js';
import { isId, newId } from '../../kernel/ids.js';
import { type Principal, type Tenant, tenantOf } from '../../kernel/principal.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import type { ResourceEvent } from '../../platform/domain-events.js';
import type { Change, Unit } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import { resourcesRepository as repo, toResource } from './resources.repository.js';
import type { CreateResourceInput, ListResourcesFilter, Resource, UpdateResourceInput } from './resources.schemas.js';

/**
 * The rules of resources: create, read, list, replace name/metadata, archive, delete (docs/api.md#resources).
 * Every change emits its event (`resource.*`) in its transaction; the subscribers (webhook deliveries,
 * integrations, plan limits) react in the same transaction.
 */
export function createResourcesService(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  /** Emits a resource's catalogue event in the change (docs/api.md#events). */
  const emit = (c: Change<Principal>, type: ResourceEvent['type'], resourceId: string, data: object, at: number) =>
    c.emit({ type, tenant: tenantOf(c.actor), resourceId, data: data as Record<string, unknown>, at });

  /**
   * The row a change is about, locked until its transaction ends (docs/api.md#resources): writes of one resource
   * run one after another, so each decides on what the previous one committed (a repeated archive
   * finds it archived, a PUT after a DELETE finds nothing), and each takes its time after the lock, so
   * one resource's events are ordered by commit.
   */
  async function lockOrThrow(trx: Db, principal: Principal, id: string): Promise<ResourcesTable> {
    const row = isId('resource', id) ? await repo.findForWrite(trx, tenantOf(principal), id) : undefined;
    if (!row) throw new NotFoundError('resource');
    return row;
  }

  /** A time for a change of `row`: now, never before its last change (clocks of processes differ). */
  const changeTime = (row: ResourcesTable) => Math.max(clock.now(), Date.parse(row.updated_at));

  async function findOrThrow(trx: Db, principal: Principal, id: string): Promise<ResourcesTable> {
    const row = isId('resource', id) ? await repo.find(trx, tenantOf(principal), id) : undefined;
    if (!row) throw new NotFoundError('resource');
    return row;
  }

  /** Creates an active resource. */
  async function create(u: Unit<Principal>, input: CreateResourceInput): Promise<Resource> {
    const principal = u.actor;
    return u.run(async (c) => {
      const { trx, audit } = c;
      const now = clock.now();
      const row: ResourcesTable = {
        id: newId('resource', now),
        workspace_id: principal.workspaceId,
        env: principal.env,
        name: input.name,
        type: input.type,
        status: 'active',
        metadata: writeJson(input.metadata ?? {}),
        created_at: isoAt(now),
        updated_at: isoAt(now),
      };
      await repo.insert(trx, row);
      const resource = toResource(row);
      await emit(c, 'resource.created', row.id, { resource_id: row.id, resource }, now);
      audit.record({
        action: 'resource.created',
        target: { type: 'resource', id: row.id },
        env: row.env,
        changes: changesOf(null, audited(resource)),
      });
      return resource;
    });
  }

  /** One resource of the caller's workspace and environment; NotFoundError otherwise. */
  async function get(principal: Principal, id: string): Promise<Resource> {
    return toResource(await findOrThrow(db, principal, id));
  }

  async function list(principal: Principal, filter: ListResourcesFilter, page: PageRequest): Promise<Page<Resource>> {
    const p = await repo.list(db, tenantOf(principal), filter, page);
    return { ...p, items: p.items.map(toResource) };
  }

  /** PUT: replaces name and/or metadata; omitted fields keep their values. */
  async function update(u: Unit<Principal>, id: string, input: UpdateResourceInput): Promise<Resource> {
    const principal = u.actor;
    return u.run(async (c) => {
      const { trx, audit } = c;
      const before = await lockOrThrow(trx, principal, id);
      const set: Partial<ResourcesTable> = {};
      if (input.name !== undefined) set.name = input.name;
      if (input.metadata !== undefined) set.metadata = writeJson(input.metadata);
      if (Object.keys(set).length === 0) return toResource(before);
      const now = changeTime(before);
      set.updated_at = isoAt(now);
      if (!(await repo.update(trx, tenantOf(principal), id, set))) throw new NotFoundError('resource');
      const old = toResource(before);
      const resource = toResource({ ...before, ...set } as ResourcesTable);
      await emit(
        c,
        'resource.updated',
        id,
        { resource_id: id, resource, previous_attributes: changed(old, resource) },
        now,
      );
      const changes = changesOf(audited(old), audited(resource));
      if (Object.keys(changes).length > 0) {
        audit.record({ action: 'resource.updated', target: { type: 'resource', id }, env: before.env, changes });
      }
      return resource;
    });
  }

  /** docs/api.md#resources: sets status; repeating a transition answers the resource unchanged. */
  async function setStatus(u: Unit<Principal>, id: string, status: Resource['status']): Promise<Resource> {
    const principal = u.actor;
    return u.run(async (c) => {
      const { trx, audit } = c;
      const before = await lockOrThrow(trx, principal, id);
      if (before.status === status) return toResource(before);
      const now = changeTime(before);
      const updated_at = isoAt(now);
      // The event only for a row that changed (the lock makes this the row just read).
      if (!(await repo.update(trx, tenantOf(principal), id, { status, updated_at }))) {
        return toResource((await repo.find(trx, tenantOf(principal), id)) ?? before);
      }
      const data = { resource_id: id, previous_status: before.status, current_status: status };
      await emit(c, 'resource.status_changed', id, data, now);
      audit.record({
        action: status === 'archived' ? 'resource.archived' : 'resource.unarchived',
        target: { type: 'resource', id },
        env: before.env,
        changes: { status: { before: before.status, after: status } },
      });
      return toResource({ ...before, status, updated_at });
    });
  }

  /** docs/api.md#resources: deletes the resource; a second delete is NotFoundError. */
  async function remove(u: Unit<Principal>, id: string): Promise<void> {
    const principal = u.actor;
    await u.run(async (c) => {
      const { trx, audit } = c;
      const before = await lockOrThrow(trx, principal, id);
      if (!(await repo.delete(trx, tenantOf(principal), id))) throw new NotFoundError('resource');
      // The outbox purges the resource's events first, so the deletion itself stays on record (id only).
      await emit(c, 'resource.deleted', id, { resource_id: id }, changeTime(before));
      audit.record({
        action: 'resource.deleted',
        target: { type: 'resource', id },
        env: before.env,
        changes: changesOf(audited(toResource(before)), null),
      });
    });
  }

  return {
    /** A batch of the workspace's resources (both environments) after `after` (an id; null: from the first), oldest first: an export's walk. */
    exportBatch: async (workspaceId: string, env: Env, after: string | null, limit: number) => {
      const rows = await repo.exportBatch(db, workspaceId, env, after, limit);
      return { rows: rows.map((r) => ({ ...toResource(r), env: r.env })), next: rows.at(-1)?.id ?? null };
    },
    create,
    get,
    list,
    update,
    archive: (u: Unit<Principal>, id: string) => setStatus(u, id, 'archived'),
    unarchive: (u: Unit<Principal>, id: string) => setStatus(u, id, 'active'),
    remove,
    /** How many resources an environment holds (plan limits, docs/billing.md). */
    countIn: (tenant: Tenant, d: Db = db): Promise<number> => repo.count(d, tenant, {}),
  };
}
export type ResourcesService = ReturnType<typeof createResourcesService>;

/** A resource's fields as its audit entries show them. */
function audited(r: Resource) {
  return { name: r.name, type: r.type, status: r.status, metadata: r.metadata };
}

/** `previous_attributes`: the fields whose value changed, as they were before. */
function changed(before: Resource, after: Resource): { name?: string; metadata?: Record<string, string> } {
  const out: { name?: string; metadata?: Record<string, string> } = {};
  if (before.name !== after.name) out.name = before.name;
  if (JSON.stringify(before.metadata) !== JSON.stringify(after.metadata)) out.metadata = before.metadata;
  return out;
}
