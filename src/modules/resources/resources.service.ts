import { type Db, writeJson } from '../../db/dialect.js';
import type { ResourcesTable } from '../../db/types.js';
import type { AuditTrail } from '../../kernel/audit-actions.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { NotFoundError } from '../../kernel/errors.js';
import { isId, newId } from '../../kernel/ids.js';
import { type Principal, type Tenant, tenantOf } from '../../kernel/principal.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import { changesOf } from '../audit/changes.js';
import type { WriteHooks, WriteTx } from '../auth/write-runner.js';
import type { Event, EventType } from '../events/events.schemas.js';
import type { Outbox } from '../webhooks/outbox.js';
import { resourcesRepository as repo, toResource } from './resources.repository.js';
import type { CreateResourceInput, ListResourcesFilter, Resource, UpdateResourceInput } from './resources.schemas.js';

type Emit = (type: EventType, resourceId: string, data: Event['data'], now: number) => Promise<void>;

/**
 * The rules of resources: create, read, list, replace name/metadata, archive (docs/api.md#resources), delete (docs/api.md#resources).
 * Every change records its event in the same transaction (outbox).
 */
export function createResourcesService(deps: {
  db: Db;
  clock: Clock;
  outbox: Outbox;
  /** The plan's resource limit (billing), checked first in a creation's transaction; throws to refuse. */
  checkCreate?: (trx: Db, tenant: Tenant) => Promise<void>;
}) {
  const { db, clock, outbox } = deps;

  /** Runs a change as `principal` through the outbox (events queued with it, the worker woken after). */
  function change<T>(
    principal: Principal,
    fn: (trx: WriteTx, emit: Emit, audit: AuditTrail) => Promise<T>,
    hooks: WriteHooks<T> | undefined,
  ): Promise<T> {
    return outbox.write(principal, (trx, queue, audit) => fn(trx, queue.event, audit), hooks);
  }

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
  async function create(
    principal: Principal,
    input: CreateResourceInput,
    hooks?: WriteHooks<Resource>,
  ): Promise<Resource> {
    return change(
      principal,
      async (trx, emit, audit) => {
        await deps.checkCreate?.(trx, tenantOf(principal));
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
        await emit('resource.created', row.id, { resource_id: row.id, resource }, now);
        audit.record({
          action: 'resource.created',
          target: { type: 'resource', id: row.id },
          env: row.env,
          changes: changesOf(null, audited(resource)),
        });
        return resource;
      },
      hooks,
    );
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
  async function update(
    principal: Principal,
    id: string,
    input: UpdateResourceInput,
    hooks?: WriteHooks<Resource>,
  ): Promise<Resource> {
    return change(
      principal,
      async (trx, emit, audit) => {
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
      },
      hooks,
    );
  }

  /** docs/api.md#resources: sets status; repeating a transition answers the resource unchanged. */
  async function setStatus(
    principal: Principal,
    id: string,
    status: Resource['status'],
    hooks?: WriteHooks<Resource>,
  ): Promise<Resource> {
    return change(
      principal,
      async (trx, emit, audit) => {
        const before = await lockOrThrow(trx, principal, id);
        if (before.status === status) return toResource(before);
        const now = changeTime(before);
        const updated_at = isoAt(now);
        // The event only for a row that changed (the lock makes this the row just read).
        if (!(await repo.update(trx, tenantOf(principal), id, { status, updated_at }))) {
          return toResource((await repo.find(trx, tenantOf(principal), id)) ?? before);
        }
        const data = { resource_id: id, previous_status: before.status, current_status: status };
        await emit('resource.status_changed', id, data, now);
        audit.record({
          action: status === 'archived' ? 'resource.archived' : 'resource.unarchived',
          target: { type: 'resource', id },
          env: before.env,
          changes: { status: { before: before.status, after: status } },
        });
        return toResource({ ...before, status, updated_at });
      },
      hooks,
    );
  }

  /** docs/api.md#resources: deletes the resource; a second delete is NotFoundError. */
  async function remove(principal: Principal, id: string, hooks?: WriteHooks<void>): Promise<void> {
    await change(
      principal,
      async (trx, emit, audit) => {
        const before = await lockOrThrow(trx, principal, id);
        if (!(await repo.delete(trx, tenantOf(principal), id))) throw new NotFoundError('resource');
        await outbox.purgeResource(trx, tenantOf(principal), id);
        // Written after the purge, so the deletion itself stays on record (id only, docs/api.md#resources).
        await emit('resource.deleted', id, { resource_id: id }, changeTime(before));
        audit.record({
          action: 'resource.deleted',
          target: { type: 'resource', id },
          env: before.env,
          changes: changesOf(audited(toResource(before)), null),
        });
      },
      hooks,
    );
  }

  return {
    create,
    get,
    list,
    update,
    archive: (principal: Principal, id: string, hooks?: WriteHooks<Resource>) =>
      setStatus(principal, id, 'archived', hooks),
    unarchive: (principal: Principal, id: string, hooks?: WriteHooks<Resource>) =>
      setStatus(principal, id, 'active', hooks),
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
