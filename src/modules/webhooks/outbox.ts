import { type Dialect, isReceiversMoved, readJson } from '../../db/dialect.js';
import type { ApiKeysTable, DeliveriesTable, EventsTable, UsersTable, WebhooksTable } from '../../db/types.js';
import { isoAt } from '../../kernel/clock.js';
import { newId } from '../../kernel/ids.js';
import type { SystemActor, Tenant } from '../../kernel/principal.js';
import type { Sealer } from '../../lib/sealed.js';
import type { Signal } from '../../lib/signal.js';
import { purgeInBatches } from '../../platform/batched-purge.js';
import type { DomainEventOf, ResourceEvent } from '../../platform/domain-events.js';
import type { Change, Subscriber, Unit, WriteTx } from '../../platform/unit-of-work.js';
import type { AttemptResult, ClaimedDelivery } from '../delivery-engine/claims.js';
import type { DeliveryClaim } from '../delivery-engine/delivery.worker.js';
import { exampleEventData } from '../events/event-examples.js';
import {
  type AnyEventType,
  type Event,
  type EventDataOf,
  type EventType,
  type PlatformEventType,
  TEST_EVENT_TYPE,
} from '../events/events.schemas.js';
import type { EventsService, ReceiversVersion } from '../events/events.service.js';
import type { KeyObjectData, MemberObjectData } from '../events/platform-events.schemas.js';
import { deliveriesRepository } from './deliveries.repository.js';
import type { EndpointHealth } from './endpoint-health.js';
import { secretAt } from './secret-at.js';

export type { AttemptResult, ClaimedDelivery };

/**
 * The transactional outbox (docs/api.md#events), a subscriber of every change: a change's catalogue event,
 * its row and one delivery per subscribed enabled webhook commit with the change or not at all, and this
 * process's delivery worker is woken after the commit (other processes by NOTIFY or their poll).
 */
export function createOutbox(deps: {
  dialect: Dialect;
  deliveriesDue: Signal;
  events: Pick<
    EventsService,
    'insert' | 'insertExpecting' | 'resourceEventIds' | 'deleteForResource' | 'purgeBefore' | 'receiversChanged'
  >;
  /** Endpoint health (docs/api.md#endpoint-health), applied to the outcomes the worker writes. */
  health: EndpointHealth;
  /** Opens the claimed webhooks' signing secrets (stored sealed, src/lib/sealed.ts): only here, to sign. */
  sealer: Pick<Sealer, 'open' | 'openOrNull'>;
  /** How many days events and their deliveries are kept (EVENT_RETENTION_DAYS, docs/api.md#events). */
  retentionDays: number;
}) {
  const { dialect, deliveriesDue, events } = deps;

  // Performance (docs/performance.md, "The receivers of an event, cached"): the enabled webhooks of a
  // workspace and environment, as read under the workspace's receivers' token. Every change to its
  // webhooks or integrations replaces the token in its own transaction (`receivers.changed`), and
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

  /** Wakes this process's delivery worker once `c` commits. */
  function wakeAfter(c: Change): void {
    c.afterCommit(() => deliveriesDue.notify());
  }

  /**
   * Records a catalogue event and its deliveries in the change. Performance (docs/performance.md, "A write in one
   * round trip on PostgreSQL"): where the dialect defers, an event whose receivers this process holds is inserted
   * later with its token asserted (`insertExpecting`); if the token moved meanwhile the transaction fails before it
   * commits (WK409), `retrying` below forgets the workspace's webhooks and the change runs once more, reading them.
   */
  async function publish(c: Change, e: ResourceEvent): Promise<void> {
    const queued = await record(
      c,
      e.tenant,
      e.type,
      e.resourceId,
      e.data as Event['data'],
      e.at,
      c.attempt === 1 && dialect.defers === true,
    );
    if (queued > 0) wakeAfter(c);
  }

  /**
   * Records a platform event (docs/api.md#platform-events) in the change, to the subscribed enabled endpoints of
   * `env` (live for what has no environment of its own) except `except`. Its receivers are read in the change's
   * transaction, never from the cache: a few such events, and an endpoint disabled earlier in the same change
   * (the worker's cycle) is never a receiver.
   */
  async function publishPlatform<T extends PlatformEventType>(
    c: Change,
    at: string,
    workspaceId: string,
    env: Tenant['env'],
    type: T,
    data: EventDataOf<T>,
    except?: string,
  ): Promise<void> {
    const now = Date.parse(at);
    const queued = await record(c, { workspaceId, env }, type, null, data as Event['data'], now, false, except);
    if (queued > 0) wakeAfter(c);
  }

  const onKey = async (c: Change, e: DomainEventOf<'key.created' | 'key.revoked' | 'key.rolled' | 'key.expiring'>) => {
    // A rolled key's row is read before its new expiry is set: the event says when it stops working.
    const key = keyObject(e.type === 'key.rolled' && e.oldExpiresAt ? { ...e.key, expires_at: e.oldExpiresAt } : e.key);
    const { workspace_id: ws, env } = e.key;
    if (e.type === 'key.rolled') {
      const old = e.oldExpiresAt ?? e.at;
      await publishPlatform(c, e.at, ws, env, 'key.rolled', {
        key,
        successor_id: e.successorId ?? '',
        old_expires_at: old,
      });
    } else if (e.type === 'key.expiring') {
      await publishPlatform(c, e.at, ws, env, 'key.expiring', { key, expires_at: e.expiresAt ?? e.at });
    } else {
      await publishPlatform(c, e.at, ws, env, e.type, { key });
    }
  };

  /** The outbox as a subscriber of changes (registered in src/services.ts). */
  const subscriber: Subscriber = {
    name: 'webhook deliveries',
    on: {
      'resource.created': publish,
      'resource.updated': publish,
      'resource.status_changed': publish,
      // docs/api.md#resources: a deleted resource's events and their pending deliveries go with it; the deletion
      // itself is recorded after the purge, so it stays on record (id only).
      'resource.deleted': async (c, e) => {
        await purgeResource(c.trx, e.tenant, e.resourceId);
        await publish(c, e);
      },
      'key.created': onKey,
      'key.revoked': onKey,
      'key.rolled': onKey,
      'key.expiring': onKey,
      // A new workspace's first admin joins it as it is made: no endpoint exists yet to tell.
      'member.added': async (c, e) => {
        if (e.first) return;
        await publishPlatform(c, e.at, e.member.workspace_id, 'live', 'member.invited', {
          member: memberObject(e.member),
        });
      },
      'member.joined': (c, e) =>
        publishPlatform(c, e.at, e.member.workspace_id, 'live', 'member.joined', { member: memberObject(e.member) }),
      'member.role_changed': (c, e) =>
        publishPlatform(c, e.at, e.member.workspace_id, 'live', 'member.role_changed', {
          member: memberObject(e.member),
          previous_role: e.previousRole ?? e.member.role,
        }),
      'member.removed': (c, e) =>
        publishPlatform(c, e.at, e.member.workspace_id, 'live', 'member.removed', { member: memberObject(e.member) }),
      // An endpoint's own status change goes to the other endpoints of its environment, never to itself.
      'webhook.status_changed': (c, e) => {
        const w = e.webhook;
        const about = { webhook_id: w.id, label: w.label ?? null, env: w.env };
        return w.status === 'disabled'
          ? publishPlatform(c, e.at, w.workspace_id, w.env, 'webhook.disabled', { ...about, reason: 'manual' }, w.id)
          : publishPlatform(c, e.at, w.workspace_id, w.env, 'webhook.enabled', about, w.id);
      },
      'endpoint.health': async (c, e) => {
        if (e.kind !== 'disabled') return;
        const w = e.webhook;
        const about = { webhook_id: w.id, label: w.label ?? null, env: w.env };
        await publishPlatform(
          c,
          e.at,
          w.workspace_id,
          w.env,
          'webhook.disabled',
          { ...about, reason: 'failing' },
          w.id,
        );
      },
      // Once per event and endpoint, to the other endpoints (the failing one's own failures would feed its health),
      // and never about a delivery of a delivery.exhausted event (no loop).
      'delivery.exhausted': async (c, e) => {
        const d = e.delivery;
        if (d.event_type === 'delivery.exhausted') return;
        if (!(await deliveriesRepository.markExhausted(c.trx, d.event_id, d.webhook_id, e.at))) return;
        await publishPlatform(
          c,
          e.at,
          d.workspace_id,
          d.env,
          'delivery.exhausted',
          {
            delivery_id: d.id,
            event_id: d.event_id,
            event_type: d.event_type,
            webhook_id: d.webhook_id,
            attempts: Number(d.attempt_count),
            last_response_status: d.last_response_status === null ? null : Number(d.last_response_status),
          },
          d.webhook_id,
        );
      },
      'billing.notice': async (c, { notice: n }) => {
        if (n.type === 'usage.threshold') {
          const { threshold, hard_cap, billable_requests, included_requests, plan, period_start, period_end } = n.data;
          const usage = { billable_requests, included_requests, plan, period_start, period_end };
          const crossed = n.thresholds ?? [threshold];
          for (const th of crossed) {
            if (th !== 50 && th !== 80 && th !== 100) continue;
            await publishPlatform(c, n.data.at, n.workspaceId, 'live', 'usage.threshold', { threshold: th, ...usage });
          }
          if (hard_cap && crossed.includes(100)) {
            await publishPlatform(c, n.data.at, n.workspaceId, 'live', 'usage.cap_reached', usage);
          }
        } else if (n.type === 'invoice.issued') {
          const { at: _at, ...invoice } = n.data;
          await publishPlatform(c, n.data.at, n.workspaceId, 'live', 'invoice.finalized', invoice);
        }
        // A declined charge's notice (`invoice.payment_failed`) is the admins' email only: its event comes from the
        // charge's own domain event, below.
      },
      'invoice.settled': async (c, e) => {
        if (e.status !== 'paid') return;
        const { at, ...invoice } = e.data;
        await publishPlatform(c, e.data.at, e.workspaceId, 'live', 'invoice.payment_succeeded', {
          ...invoice,
          paid_at: at,
        });
      },
      'export.ready': async (c, e) => {
        await publishPlatform(c, e.at, e.workspaceId, 'live', 'export.ready', {
          export_id: e.exportId,
          expires_at: e.expiresAt,
        });
      },
      // docs/data-lifecycle.md#deleting-a-workspace: delivered even while the workspace's other deliveries are held.
      'workspace.deletion_scheduled': (c, e) =>
        publishPlatform(c, e.at, e.workspaceId, 'live', 'workspace.deletion_scheduled', {
          workspace_id: e.workspaceId,
          delete_at: e.deleteAt ?? e.at,
        }),
      'workspace.deletion_cancelled': (c, e) =>
        publishPlatform(c, e.at, e.workspaceId, 'live', 'workspace.deletion_cancelled', {
          workspace_id: e.workspaceId,
        }),
      'invoice.payment_failed': async (c, e) => {
        const { at, ...invoice } = e.data;
        await publishPlatform(c, e.data.at, e.workspaceId, 'live', 'invoice.payment_failed', {
          ...invoice,
          failed_at: at,
        });
      },
      'receivers.changed': async (c, e) => {
        await events.receiversChanged(c.trx, e.workspaceId);
        // This process's own change drops what it holds for the workspace, so its next write reads the
        // webhooks instead of expecting the old token and running again.
        forget(e.workspaceId);
      },
    },
    retrying(actor, err) {
      if (!isReceiversMoved(err) || !('workspaceId' in actor)) return false;
      forget(actor.workspaceId);
      return true;
    },
  };

  /** Writes an event and its deliveries in `trx`; returns how many deliveries it queued. */
  async function record(
    c: Change,
    tenant: Tenant,
    type: EventType,
    resourceId: string | null,
    data: Event['data'],
    now: number,
    expecting: boolean,
    except?: string,
  ): Promise<number> {
    const { trx } = c;
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
    await c.emit({ type: 'event.recorded', event, receivers });
    const hooks =
      held?.hooks ??
      (except === undefined && resourceId !== null
        ? await subscribers(trx, tenant, receivers)
        : await deliveriesRepository.subscribers(trx, tenant));
    const targets = hooks
      .filter((h) => {
        if (h.id === except) return false;
        const events = readJson<string[]>(h.events);
        return events.includes('*') || events.includes(type);
      })
      .map((h) => h.id);
    return queue(trx, tenant, event, targets, now);
  }

  /**
   * Records a test event of `type` (`webhook.test` by default, or a catalogue type with example data and
   * `test: true`) and its one delivery, to `webhookId` only, whatever it subscribes to; returns the delivery row
   * (docs/api.md#test-events). Never told to integrations and never about a real resource (`resource_id` null).
   */
  async function recordTest(
    c: Change,
    tenant: Tenant,
    webhookId: string,
    now: number,
    type: AnyEventType = TEST_EVENT_TYPE,
  ): Promise<DeliveriesTable> {
    const data = exampleEventData(type, { workspaceId: tenant.workspaceId, webhookId, now });
    const event = eventRow(tenant, type, null, data, now, type !== TEST_EVENT_TYPE);
    await events.insert(c.trx, event);
    await queue(c.trx, tenant, event, [webhookId], now);
    wakeAfter(c);
    return (await deliveriesRepository.findByEvent(c.trx, event.id)) as DeliveriesTable;
  }

  /** Says that `count` existing deliveries were made due again in `c` (a resend): the workers are woken at its commit. */
  async function due(c: Change, count: number): Promise<void> {
    if (count === 0) return;
    await dialect.notifyOnCommit?.(c.trx);
    wakeAfter(c);
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
    // The type and its data agree: each caller takes them from the same catalogue entry.
    const event = (
      test
        ? { id, event: type, created_at: createdAt, test: true, data }
        : { id, event: type, created_at: createdAt, data }
    ) as Event;
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
   * The retention job (docs/api.md#events): deletes deliveries with their attempts, then events, created more
   * than EVENT_RETENTION_DAYS before `now` (one exactly that old stays), in bounded batches as the unit's actor
   * (the scheduler), and records one `events.purged` entry in each workspace it deleted something of. Returns
   * the rows removed (deliveries and events).
   */
  function purgeExpired(u: Unit<SystemActor>, now: number): Promise<number> {
    const cutoff = isoAt(now - deps.retentionDays * 86_400_000);
    return purgeInBatches(u, {
      action: 'events.purged',
      target: 'events',
      steps: [
        { name: 'deliveries', run: (trx, limit) => deliveriesRepository.purgeBefore(trx, cutoff, limit) },
        { name: 'events', run: (trx, limit) => events.purgeBefore(trx, cutoff, limit) },
      ],
    });
  }

  /**
   * The delivery worker's one write transaction per cycle, as `actor` (the worker): the outcomes of
   * the attempts finished since the last cycle, then claims of up to `claim.limit` due deliveries
   * (docs/api.md#deployment), with the endpoints' health (docs/api.md#endpoint-health) and the
   * notifications it causes. Never keys or users (the runner's keepsKeys).
   */
  function workerCycle(
    u: Unit,
    workerId: string,
    outcomes: AttemptResult[],
    claim: DeliveryClaim,
  ): Promise<ClaimedDelivery[]> {
    return u.run(async (c) => {
      const { trx } = c;
      if (outcomes.length > 0) {
        // Endpoint rows first, then their deliveries: the lock order of a hand-made disable too.
        const endpoints = await deps.health.lock(trx, outcomes);
        const written = await deliveriesRepository.complete(trx, workerId, outcomes, claim.now);
        await deps.health.apply(c, endpoints, written);
        // What used its last retry (docs/api.md#platform-events: delivery.exhausted).
        const exhausted = written.filter((r) => r.status === 'failed').map((r) => r.deliveryId);
        for (const delivery of await deliveriesRepository.exhaustedOf(trx, exhausted)) {
          await c.emit({ type: 'delivery.exhausted', delivery, at: claim.now });
        }
      }
      if (claim.limit === 0) return [];
      const claimed = await deliveriesRepository.claim(trx, { ...claim, workerId });
      // Each opening is cached by the stored value (src/lib/sealed.ts): a warm worker runs no AES per delivery.
      return claimed.map((d) => ({
        ...d,
        secret: deps.sealer.open(d.secret, secretAt(d.workspace_id, d.webhook_id, 'secret')),
        previous_secret: deps.sealer.openOrNull(
          d.previous_secret,
          secretAt(d.workspace_id, d.webhook_id, 'previous_secret'),
        ),
      }));
    });
  }

  return { subscriber, recordTest, due, purgeExpired, workerCycle };
}
export type Outbox = ReturnType<typeof createOutbox>;

/** A key as its events carry it: its record, never the key, its digest or its prefix. */
function keyObject(k: ApiKeysTable): KeyObjectData {
  return {
    id: k.id,
    name: k.name,
    env: k.env,
    scopes: k.scopes === null ? null : readJson<string[]>(k.scopes),
    user_id: k.user_id,
    created_by: k.created_by ?? null,
    created_at: isoAt(Date.parse(k.created_at)),
    expires_at: k.expires_at ? isoAt(Date.parse(k.expires_at)) : null,
    revoked_at: k.revoked_at ? isoAt(Date.parse(k.revoked_at)) : null,
  };
}

/** A member as their events carry them. */
function memberObject(m: Pick<UsersTable, 'id' | 'email' | 'name' | 'role'>): MemberObjectData {
  return { id: m.id, email: m.email, name: m.name ?? null, role: m.role };
}
