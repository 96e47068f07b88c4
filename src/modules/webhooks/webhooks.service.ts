import { randomBytes } from 'node:crypto';
import { type Db, type Dialect, readJson, writeJson } from '../../db/dialect.js';
import type { WebhooksTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import type { Env } from '../../kernel/environments.js';
import { ConflictError, fieldError, NotFoundError, ValidationError } from '../../kernel/errors.js';
import { isId, newId } from '../../kernel/ids.js';
import { type Principal, type Tenant, tenantOf } from '../../kernel/principal.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import type { Sealer } from '../../lib/sealed.js';
import { checkWebhookUrl, type UrlGuardOptions } from '../../lib/url-guard.js';
import type { Change, Unit } from '../../platform/unit-of-work.js';
import { changesOf, REDACTED } from '../audit/changes.js';
import { type AnyEventType, TEST_EVENT_TYPE } from '../events/events.schemas.js';
import { deliveriesRepository, toDelivery } from './deliveries.repository.js';
import { FRESH_WINDOW } from './endpoint-health.js';
import type { Outbox } from './outbox.js';
import { secretAt } from './secret-at.js';
import { webhooksRepository as repo, toWebhook, webhookSealedColumns } from './webhooks.repository.js';
import {
  type CreatedWebhook,
  type CreateWebhookInput,
  type Delivery,
  MAX_WEBHOOKS,
  type UpdateWebhookInput,
  type Webhook,
} from './webhooks.schemas.js';

/** docs/api.md#webhooks: `whsec_` + base64 of 32 random bytes (Standard Webhooks keys with the decoded part). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Webhook endpoints (docs/api.md#webhooks, #webhook-urls) and their delivery logs (docs/api.md#webhook-deliveries). */
export function createWebhooksService(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  urlGuard: UrlGuardOptions;
  outbox: Pick<Outbox, 'recordTest'>;
  /** Seals the signing secrets at rest (src/lib/sealed.ts); opened only to sign (outbox.ts, the worker's claim). */
  sealer: Sealer;
}) {
  const { db, clock, sealer } = deps;

  /**
   * A webhook created, deleted, enabled or disabled, or given other events changes the workspace's receivers:
   * emitted in the change, so no process keeps fanning out to the webhooks it cached (outbox.ts).
   */
  const receiversChanged = (c: Change, workspaceId: string) => c.emit({ type: 'receivers.changed', workspaceId });

  /** The caller's webhook, read under a row lock when `lock` (a change follows); else 404. */
  async function findOrThrow(trx: Db, principal: Principal, id: string, lock = false): Promise<WebhooksTable> {
    const row = isId('webhook', id) ? await repo.find(trx, tenantOf(principal), id, lock) : undefined;
    if (!row) throw new NotFoundError('webhook');
    return row;
  }

  /** Registers an endpoint; the URL is checked against the webhook URL rules first. Throws ValidationError. */
  async function create(u: Unit<Principal>, input: CreateWebhookInput): Promise<CreatedWebhook> {
    const principal = u.actor;
    const checked = await checkWebhookUrl(input.url, deps.urlGuard);
    if (!checked.ok) throw fieldError('url', checked.issue, checked.message);
    return u.run(async (c) => {
      const { trx, audit } = c;
      // Serialise creations per workspace so two concurrent ones cannot both pass the limit.
      await deps.dialect.holdExclusive(trx, `webhooks:${principal.workspaceId}`);
      if ((await repo.count(trx, tenantOf(principal))) >= MAX_WEBHOOKS) {
        const message = `A workspace can have at most ${MAX_WEBHOOKS} webhooks per environment; delete one first.`;
        throw new ValidationError(message, [{ field: 'url', issue: 'limit_reached', message }]);
      }
      const now = isoAt(clock.now());
      const id = newId('webhook');
      const secret = newWebhookSecret();
      const row: WebhooksTable = {
        id,
        workspace_id: principal.workspaceId,
        env: principal.env,
        url: input.url,
        events: writeJson(input.events),
        label: input.label ?? null,
        status: 'enabled',
        secret: sealer.seal(secret, secretAt(principal.workspaceId, id, 'secret')),
        previous_secret: null,
        previous_secret_expires_at: null,
        disabled_reason: null,
        created_at: now,
        updated_at: now,
      };
      await repo.insert(trx, row);
      // The plan's webhook limit (billing) refuses it here, after the workspace lock.
      await c.emit({ type: 'webhook.created', tenant: tenantOf(principal), webhookId: row.id });
      await receiversChanged(c, row.workspace_id);
      audit.record({
        action: 'webhook.created',
        target: { type: 'webhook', id: row.id },
        env: row.env,
        changes: changesOf(null, { ...audited(row), secret }),
      });
      return { ...toWebhook(row, now), secret };
    });
  }

  async function get(principal: Principal, id: string): Promise<Webhook> {
    return toWebhook(await findOrThrow(db, principal, id), isoAt(clock.now()));
  }

  async function list(principal: Principal, page: PageRequest): Promise<Page<Webhook>> {
    const p = await repo.list(db, tenantOf(principal), page);
    const now = isoAt(clock.now());
    return { ...p, items: p.items.map((row) => toWebhook(row, now)) };
  }

  /**
   * Changes url, events and label (the same rules as at creation); the secret and the delivery log
   * stay. `{}` changes nothing. Throws ValidationError (the webhook URL rules, docs/api.md#webhook-urls, for a new url) or NotFoundError.
   */
  async function update(u: Unit<Principal>, id: string, input: UpdateWebhookInput): Promise<Webhook> {
    const principal = u.actor;
    if (input.url !== undefined) {
      const checked = await checkWebhookUrl(input.url, deps.urlGuard);
      if (!checked.ok) throw fieldError('url', checked.issue, checked.message);
    }
    return u.run(async (c) => {
      const row = await findOrThrow(c.trx, principal, id, true);
      const patch: Partial<WebhooksTable> = {};
      if (input.url !== undefined && input.url !== row.url) patch.url = input.url;
      if (input.events !== undefined && JSON.stringify(input.events) !== JSON.stringify(readJson(row.events))) {
        patch.events = writeJson(input.events);
      }
      if (input.label !== undefined && input.label !== row.label) patch.label = input.label;
      return save(c, row, patch, 'webhook.updated');
    });
  }

  /**
   * `disabled`: no new deliveries, and its pending ones are cancelled in the same transaction.
   * `enabled`: deliveries resume with the next event. Repeating either changes nothing.
   */
  async function setStatus(u: Unit<Principal>, id: string, status: 'enabled' | 'disabled'): Promise<Webhook> {
    const principal = u.actor;
    return u.run(async (c) => {
      const { trx } = c;
      const row = await findOrThrow(trx, principal, id, true);
      if (row.status === status) return toWebhook(row, isoAt(clock.now()));
      const now = isoAt(clock.now());
      if (status === 'disabled') await deliveriesRepository.cancelPending(trx, id, now);
      // Enabling by hand starts a fresh health window (docs/api.md#endpoint-health).
      const patch: Partial<WebhooksTable> =
        status === 'disabled'
          ? { status, disabled_reason: 'manual' }
          : { status, disabled_reason: null, ...FRESH_WINDOW };
      const saved = await save(c, row, patch, status === 'disabled' ? 'webhook.disabled' : 'webhook.enabled');
      await c.emit({ type: 'webhook.status_changed', webhook: { ...row, ...patch, updated_at: now }, at: now });
      return saved;
    });
  }

  /**
   * A new secret, returned once; the old one keeps signing for `expireOldInS` seconds (0: stops
   * now). A secret from an earlier rotation still in its overlap stops at once.
   */
  async function rotateSecret(u: Unit<Principal>, id: string, expireOldInS: number): Promise<CreatedWebhook> {
    const principal = u.actor;
    return u.run(async (c) => {
      const { trx, audit } = c;
      const row = await findOrThrow(trx, principal, id, true);
      const nowMs = clock.now();
      const secret = newWebhookSecret();
      const overlap = expireOldInS > 0;
      // The old secret moves to previous_secret: opened and sealed again there (a value is bound to its column).
      const old = overlap ? sealer.open(row.secret, secretAt(row.workspace_id, row.id, 'secret')) : null;
      const updated = await save(c, row, {
        secret: sealer.seal(secret, secretAt(row.workspace_id, row.id, 'secret')),
        previous_secret: old === null ? null : sealer.seal(old, secretAt(row.workspace_id, row.id, 'previous_secret')),
        previous_secret_expires_at: overlap ? isoAt(nowMs + expireOldInS * 1000) : null,
      });
      audit.record({
        action: 'webhook.secret_rotated',
        target: { type: 'webhook', id: row.id },
        env: row.env,
        changes: {
          ...changesOf({ secret: REDACTED }, { secret }),
          old_secret_expires_at: {
            before: null,
            after: overlap ? isoAt(nowMs + expireOldInS * 1000) : isoAt(nowMs),
          },
        },
      });
      return { ...updated, secret };
    });
  }

  /**
   * Queues a test event of `eventType` (default `webhook.test`; docs/api.md#test-events) to this
   * endpoint only, subscribed to that type or not; 409 webhook_disabled when it is disabled.
   */
  async function sendTest(
    u: Unit<Principal>,
    id: string,
    eventType: AnyEventType = TEST_EVENT_TYPE,
  ): Promise<Delivery> {
    const principal = u.actor;
    return u.run(async (c) => {
      const hook = await findOrThrow(c.trx, principal, id, true);
      assertEnabled(hook);
      return toDelivery(await deps.outbox.recordTest(c, tenantOf(principal), id, clock.now(), eventType));
    });
  }

  async function save(
    c: Change<Principal>,
    row: WebhooksTable,
    patch: Partial<WebhooksTable>,
    action?: 'webhook.updated' | 'webhook.disabled' | 'webhook.enabled',
  ): Promise<Webhook> {
    const now = isoAt(clock.now());
    if (Object.keys(patch).length === 0) return toWebhook(row, now);
    const next = { ...row, ...patch, updated_at: now };
    await repo.update(c.trx, tenantOf(c.actor), row.id, { ...patch, updated_at: now });
    // What the fan-out reads of a webhook: its status and events (deliveriesRepository.subscribers).
    if (patch.status !== undefined || patch.events !== undefined) await receiversChanged(c, row.workspace_id);
    const { audit } = c;
    if (action) {
      const changes = changesOf(audited(row), audited(next));
      if (Object.keys(changes).length > 0) {
        audit.record({ action, target: { type: 'webhook', id: row.id }, env: row.env, changes });
      }
    }
    return toWebhook(next, now);
  }

  /** Deletes the endpoint; its pending deliveries are cancelled in the same transaction (docs/api.md#webhook-deliveries). */
  async function remove(u: Unit<Principal>, id: string): Promise<void> {
    const principal = u.actor;
    await u.run(async (c) => {
      const { trx, audit } = c;
      const row = await findOrThrow(trx, principal, id);
      await repo.delete(trx, tenantOf(principal), id);
      await receiversChanged(c, row.workspace_id);
      audit.record({
        action: 'webhook.deleted',
        target: { type: 'webhook', id },
        env: row.env,
        changes: changesOf(audited(row), null),
      });
    });
  }

  /** How many webhooks an environment holds (plan limits, docs/billing.md). */
  const countIn = (tenant: Tenant, d: Db = db): Promise<number> => repo.count(d, tenant);

  return {
    /** A batch of the workspace's webhooks (never their secrets) after `after` (an id; null: from the first), oldest first: an export's walk. */
    exportBatch: async (workspaceId: string, env: Env, after: string | null, limit: number) => {
      const rows = await repo.exportBatch(db, workspaceId, env, after, limit);
      const now = isoAt(deps.clock.now());
      return { rows: rows.map((r) => ({ ...toWebhook(r, now), env: r.env })), next: rows.at(-1)?.id ?? null };
    },
    create,
    get,
    list,
    update,
    setStatus,
    rotateSecret,
    sendTest,
    remove,
    findOrThrow,
    countIn,
    /** The secrets it keeps sealed at rest (src/platform/sealed-columns.ts). */
    sealedColumns: webhookSealedColumns,
  };
}
export type WebhooksService = ReturnType<typeof createWebhooksService>;

/** A webhook's fields as its audit entries show them (the secret only ever as "[redacted]"). */
function audited(row: WebhooksTable) {
  return {
    url: row.url,
    events: readJson<string[]>(row.events),
    label: row.label,
    status: row.status,
    disabled_reason: row.disabled_reason,
  };
}

/** Deliveries go only to enabled endpoints: 409 webhook_disabled otherwise. */
export function assertEnabled(hook: WebhooksTable): void {
  if (hook.status !== 'enabled') {
    throw new ConflictError(
      'webhook_disabled',
      'This webhook is disabled; enable it with POST /v1/webhooks/{id}/enable first.',
    );
  }
}
