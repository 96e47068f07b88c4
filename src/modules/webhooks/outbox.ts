import { type Dialect, isReceiversMoved, readJson } from '../../db/dialect.js';
import type { DeliveriesTable, EventsTable, WebhooksTable } from '../../db/types.js';
import type { AuditTrail } from '../../kernel/audit-actions.js';
import { isoAt } from '../../kernel/clock.js';
import { newId } from '../../kernel/ids.js';
import { type Actor, type Tenant, tenantOf } from '../../kernel/principal.js';
import type { Signal } from '../../lib/signal.js';
import type { WriteHooks, WriteRunner, WriteTx } from '../auth/write-runner.js';
import { exampleEventData } from '../events/event-examples.js';
import { type AnyEventType, type Event, type EventType, TEST_EVENT_TYPE } from '../events/events.schemas.js';
import { EVENT_RETENTION_MS, type EventsService, type ReceiversVersion } from '../events/events.service.js';
import { type AttemptResult, type ClaimedDelivery, deliveriesRepository } from './deliveries.repository.js';
import type { EndpointHealth } from './endpoint-health.js';

export type { AttemptResult, ClaimedDelivery };

/** What a change written through the outbox can queue in its transaction (`Outbox.write`). */
export interface Queue {
  /** Records an event and one delivery per enabled webhook subscribed to it. */
  event(type: EventType, resourceId: string | null, data: Event['data'], now: number): Promise<void>;
  /**
   * Records a test event of `type` (`webhook.test` by default) and its one delivery, to `webhookId`
   * only, whatever it subscribes to; returns the delivery row (docs/api.md#test-events).
   */
  test(webhookId: string, now: number, type?: AnyEventType): Promise<DeliveriesTable>;
  /** Says that `count` existing deliveries were made due again (a resend). */
  due(count: number): Promise<void>;
}

/**
 * The transactional outbox (docs/api.md#events): a change and the events and deliveries it queues
 * commit together or not at all, and the delivery worker is woken after the commit.
 */
export function createOutbox(deps: {
  dialect: Dialect;
  writeAs: WriteRunner;
  deliveriesDue: Signal;
  events: Pick<EventsService, 'insert' | 'insertExpecting' | 'resourceEventIds' | 'deleteForResource' | 'purgeBefore'>;
  /** Endpoint health (docs/api.md#endpoint-health), applied to the outcomes the worker writes. */
  health: EndpointHealth;
  /**
   * Integrations (docs/integrations.md): told of each resource event in its transaction, with the
   * workspace's receivers' token that the event's insert read (for their cache, like the one below).
   */
  forwardEvent?: (trx: WriteTx, event: EventsTable, receivers: ReceiversVersion) => Promise<void>;
}) {
  const { dialect, deliveriesDue, events } = deps;

  // Performance (docs/performance.md, "The receivers of an event, cached"): the enabled webhooks of a
  // workspace and environment, as read under the workspace's receivers' token. Every change to its
  // webhooks or integrations replaces the token in its own transaction (events.receiversChanged), and
  // every event's insert reads it, so an entry is used only while no change to them has committed:
  // never stale, whichever process made the change.
  const subscribed = new Map<string, { version: ReceiversVersion; hooks: Pick<WebhooksTable, 'id' | 'events'>[] }>();
  const MAX_CACHED = 10_000;

  async function subscribers(trx: WriteTx, tenant: Tenant, version: ReceiversVersion) {
    const key = `${tenant.workspaceId} ${tenant.env}`;
    const cached = subscribed.get(key);
    if (cached && cached.version === version) return cached.hooks;
    // Read after the token (a later statement, or the same snapshot): never older than the token says.
    const hooks = await deliveriesRepository.subscribers(trx, tenant);
    if (subscribed.size >= MAX_CACHED) subscribed.clear();
    subscribed.set(key, { version, hooks });
    return hooks;
  }

  /** Forgets the webhooks cached for `workspaceId` (its receivers' token moved, or is about to). */
  function forget(workspaceId: string): void {
    for (const key of subscribed.keys()) if (key.startsWith(`${workspaceId} `)) subscribed.delete(key);
  }

  /**
   * Runs `fn` as `actor` in one write transaction (the write runner's), with a `Queue` for what it
   * queues; after the commit, wakes this process's delivery worker if anything was queued. The one
   * "enqueue, then wake the worker after commit" every writer of deliveries goes through.
   * Performance (docs/performance.md, "A write in one round trip on PostgreSQL"): where the dialect defers, an event
   * whose receivers this process holds is inserted later with its token asserted (`insertExpecting`); if the token
   * moved meanwhile the transaction fails before it commits, and the write runs once more with the receivers read
   * in it (the insert awaited, as without a cache).
   */
  async function write<T>(
    actor: Actor,
    fn: (trx: WriteTx, queue: Queue, audit: AuditTrail) => Promise<T>,
    hooks?: WriteHooks<T>,
  ): Promise<T> {
    try {
      return await attempt(actor, fn, hooks, dialect.defers === true);
    } catch (err) {
      if (!isReceiversMoved(err) || !('workspaceId' in actor)) throw err;
      forget(actor.workspaceId);
      return attempt(actor, fn, hooks, false);
    }
  }

  async function attempt<T>(
    actor: Actor,
    fn: (trx: WriteTx, queue: Queue, audit: AuditTrail) => Promise<T>,
    hooks: WriteHooks<T> | undefined,
    expecting: boolean,
  ): Promise<T> {
    let queued = 0;
    const result = await deps.writeAs(
      actor,
      (trx, audit) => {
        const tenant = (): Tenant => {
          if (!('workspaceId' in actor)) throw new Error(`a ${actor.kind} actor without a workspace queues no event`);
          return tenantOf(actor);
        };
        const queue: Queue = {
          async event(type, resourceId, data, now) {
            queued += await record(trx, tenant(), type, resourceId, data, now, expecting);
          },
          async test(webhookId, now, type = TEST_EVENT_TYPE) {
            const row = await recordTest(trx, tenant(), webhookId, now, type);
            queued += 1;
            return row;
          },
          async due(count) {
            if (count > 0) await dialect.notifyOnCommit?.(trx);
            queued += count;
          },
        };
        return fn(trx, queue, audit);
      },
      hooks,
    );
    if (queued > 0) deliveriesDue.notify();
    return result;
  }

  /** Writes an event and its deliveries in `trx`; returns how many deliveries it queued. */
  async function record(
    trx: WriteTx,
    tenant: Tenant,
    type: EventType,
    resourceId: string | null,
    data: Event['data'],
    now: number,
    expecting: boolean,
  ): Promise<number> {
    const event = eventRow(tenant, type, resourceId, data, now);
    // The receivers held for this workspace and environment, if any: their token is asserted instead of read.
    const held = expecting ? subscribed.get(`${tenant.workspaceId} ${tenant.env}`) : undefined;
    let receivers: ReceiversVersion;
    if (held) {
      receivers = held.version;
      await events.insertExpecting(trx, event, receivers);
    } else {
      receivers = await events.insert(trx, event);
    }
    await deps.forwardEvent?.(trx, event, receivers);
    const hooks = held?.hooks ?? (await subscribers(trx, tenant, receivers));
    const targets = hooks
      .filter((h) => {
        const events = readJson<string[]>(h.events);
        return events.includes('*') || events.includes(type);
      })
      .map((h) => h.id);
    return queue(trx, tenant, event, targets, now);
  }

  /**
   * A test event: `webhook.test` as it always was, or a catalogue type with example data and
   * `test: true`. Never told to integrations and never about a real resource (`resource_id` null).
   */
  async function recordTest(
    trx: WriteTx,
    tenant: Tenant,
    webhookId: string,
    now: number,
    type: AnyEventType,
  ): Promise<DeliveriesTable> {
    const data = exampleEventData(type, { workspaceId: tenant.workspaceId, webhookId, now });
    const event = eventRow(tenant, type, null, data, now, type !== TEST_EVENT_TYPE);
    await events.insert(trx, event);
    await queue(trx, tenant, event, [webhookId], now);
    return (await deliveriesRepository.findByEvent(trx, event.id)) as DeliveriesTable;
  }

  function eventRow(
    tenant: Tenant,
    type: AnyEventType,
    resourceId: string | null,
    data: Event['data'],
    now: number,
    test = false,
  ): EventsTable {
    const createdAt = isoAt(now);
    const id = newId('event', now);
    const event: Event = test
      ? { id, event: type, created_at: createdAt, test: true, data }
      : { id, event: type, created_at: createdAt, data };
    const payload = JSON.stringify(event);
    return {
      id,
      workspace_id: tenant.workspaceId,
      env: tenant.env,
      type,
      resource_id: resourceId,
      payload,
      created_at: createdAt,
    };
  }

  async function queue(trx: WriteTx, tenant: Tenant, event: EventsTable, webhookIds: string[], now: number) {
    const deliveries: DeliveriesTable[] = webhookIds.map((webhookId) => ({
      id: newId('delivery', now),
      webhook_id: webhookId,
      event_id: event.id,
      event_type: event.type,
      workspace_id: tenant.workspaceId,
      env: tenant.env,
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: event.created_at,
      lease_until: null,
      leased_by: null,
      last_response_status: null,
      last_error: null,
      created_at: event.created_at,
      updated_at: event.created_at,
    }));
    await deliveriesRepository.insertMany(trx, deliveries);
    if (deliveries.length > 0) await dialect.notifyOnCommit?.(trx);
    return deliveries.length;
  }

  /** docs/api.md#resources: a deleted resource's events and their pending deliveries go with it, in `trx`. */
  async function purgeResource(trx: WriteTx, tenant: Tenant, resourceId: string): Promise<void> {
    await deliveriesRepository.deletePendingOfEvents(trx, events.resourceEventIds(trx, tenant, resourceId));
    await events.deleteForResource(trx, tenant, resourceId);
  }

  /**
   * The retention job: deletes events, and deliveries with their attempts, older than 30 days
   * (docs/api.md#events), as `actor` (the scheduler); returns the number of events removed.
   */
  function purgeExpired(actor: Actor, now: number): Promise<number> {
    const cutoff = isoAt(now - EVENT_RETENTION_MS);
    return deps.writeAs(actor, async (trx) => {
      await deliveriesRepository.purgeBefore(trx, cutoff);
      return events.purgeBefore(trx, cutoff);
    });
  }

  /**
   * The delivery worker's one write transaction per cycle, as `actor` (the worker): the outcomes of
   * the attempts finished since the last cycle, then claims of up to `claim.limit` due deliveries
   * (docs/api.md#deployment), with the endpoints' health (docs/api.md#endpoint-health) and the
   * notifications it causes. Never keys or users (the runner's keepsKeys).
   */
  function workerCycle(
    actor: Actor,
    workerId: string,
    outcomes: AttemptResult[],
    claim: {
      now: string;
      leaseUntil: string;
      limit: number;
      perEndpoint: number;
      busy: ReadonlyMap<string, number>;
    },
  ): Promise<ClaimedDelivery[]> {
    return deps.writeAs(actor, async (trx, audit) => {
      if (outcomes.length > 0) {
        // Endpoint rows first, then their deliveries: the lock order of a hand-made disable too.
        const endpoints = await deps.health.lock(trx, outcomes);
        const written = await deliveriesRepository.complete(trx, workerId, outcomes, claim.now);
        await deps.health.apply(trx, endpoints, written, audit);
      }
      if (claim.limit === 0) return [];
      return deliveriesRepository.claim(trx, { ...claim, workerId });
    });
  }

  return { write, forget, purgeResource, purgeExpired, workerCycle };
}
export type Outbox = ReturnType<typeof createOutbox>;
