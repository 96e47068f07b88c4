import { randomBytes } from 'node:crypto';
import { type Db, type Dialect, writeJson } from '../../db/dialect.js';
import type { DeliveryStatus, WebhooksTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../lib/clock.js';
import { ConflictError, fieldError, NotFoundError, ValidationError } from '../../lib/errors.js';
import { isId, newId } from '../../lib/ids.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import { type Principal, tenantOf } from '../../lib/principal.js';
import type { Signal } from '../../lib/signal.js';
import type { WriteHooks, WriteRunner } from '../auth/write-runner.js';
import { deliveryRepository, toDelivery } from '../delivery/delivery.repository.js';
import { checkWebhookUrl, type UrlGuardOptions } from '../delivery/url-guard.js';
import { workspacesRepository } from '../workspaces/workspaces.repository.js';
import { webhooksRepository as repo, toWebhook } from './webhooks.repository.js';
import {
  type CreatedWebhook,
  type CreateWebhookInput,
  type Delivery,
  type DeliveryDetail,
  MAX_WEBHOOKS,
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
  writeAs: WriteRunner;
  deliveriesDue: Signal;
  urlGuard: UrlGuardOptions;
}) {
  const { db, dialect, clock, writeAs } = deps;

  async function findOrThrow(trx: Db, principal: Principal, id: string): Promise<WebhooksTable> {
    const row = isId('webhook', id) ? await repo.find(trx, tenantOf(principal), id) : undefined;
    if (!row) throw new NotFoundError('webhook');
    return row;
  }

  /** Registers an endpoint; the URL is checked against the webhook URL rules first. Throws ValidationError. */
  async function create(
    principal: Principal,
    input: CreateWebhookInput,
    hooks?: WriteHooks<CreatedWebhook>,
  ): Promise<CreatedWebhook> {
    const checked = await checkWebhookUrl(input.url, deps.urlGuard);
    if (!checked.ok) throw fieldError('url', checked.issue, checked.message);
    return writeAs(
      principal,
      async (trx) => {
        // Serialise creations per workspace so two concurrent ones cannot both pass the limit.
        await workspacesRepository.lock(trx, principal.workspaceId);
        if ((await repo.count(trx, tenantOf(principal))) >= MAX_WEBHOOKS) {
          const message = `A workspace can have at most ${MAX_WEBHOOKS} webhooks per environment; delete one first.`;
          throw new ValidationError(message, [{ field: 'url', issue: 'limit_reached', message }]);
        }
        const now = isoAt(clock.now());
        const row: WebhooksTable = {
          id: newId('webhook'),
          workspace_id: principal.workspaceId,
          env: principal.env,
          url: input.url,
          events: writeJson(input.events),
          label: input.label ?? null,
          status: 'enabled',
          secret: newWebhookSecret(),
          created_at: now,
          updated_at: now,
        };
        await repo.insert(trx, row);
        return { ...toWebhook(row), secret: row.secret };
      },
      hooks,
    );
  }

  async function get(principal: Principal, id: string): Promise<Webhook> {
    return toWebhook(await findOrThrow(db, principal, id));
  }

  async function list(principal: Principal, page: PageRequest): Promise<Page<Webhook>> {
    const p = await repo.list(db, tenantOf(principal), page);
    return { ...p, items: p.items.map(toWebhook) };
  }

  /** Deletes the endpoint; its pending deliveries are cancelled in the same transaction (docs/api.md#webhook-deliveries). */
  async function remove(principal: Principal, id: string, hooks?: WriteHooks<void>): Promise<void> {
    await writeAs(
      principal,
      async (trx) => {
        await findOrThrow(trx, principal, id);
        await repo.delete(trx, tenantOf(principal), id);
      },
      hooks,
    );
  }

  async function listDeliveries(
    principal: Principal,
    webhookId: string,
    status: DeliveryStatus | undefined,
    page: PageRequest,
  ): Promise<Page<Delivery>> {
    await findOrThrow(db, principal, webhookId);
    const p = await deliveryRepository.list(db, webhookId, status, page);
    return { ...p, items: p.items.map(toDelivery) };
  }

  async function getDelivery(principal: Principal, webhookId: string, id: string): Promise<DeliveryDetail> {
    await findOrThrow(db, principal, webhookId);
    const row = isId('delivery', id) ? await deliveryRepository.find(db, webhookId, id) : undefined;
    if (!row) throw new NotFoundError('delivery');
    return deliveryRepository.detail(db, row);
  }

  /**
   * Manual resend: one more attempt now, whatever the delivery's state. An attempt in flight is a
   * 409 delivery_in_progress (retry once it has finished).
   */
  async function retryDelivery(
    principal: Principal,
    webhookId: string,
    id: string,
    hooks?: WriteHooks<DeliveryDetail>,
  ): Promise<DeliveryDetail> {
    const detail = await writeAs(
      principal,
      async (trx) => {
        await findOrThrow(trx, principal, webhookId);
        const found = isId('delivery', id) ? await deliveryRepository.find(trx, webhookId, id) : undefined;
        if (!found) throw new NotFoundError('delivery');
        const now = isoAt(clock.now());
        if (found.status === 'pending' && found.lease_until !== null && found.lease_until >= now) {
          throw new ConflictError(
            'delivery_in_progress',
            'An attempt of this delivery is running; retry when it ends.',
          );
        }
        await deliveryRepository.requeue(trx, id, now);
        await dialect.notifyOnCommit?.(trx);
        const row = (await deliveryRepository.find(trx, webhookId, id)) as NonNullable<typeof found>;
        // Read in the transaction: the response is what this change committed (and what a replay sends).
        return deliveryRepository.detail(trx, row);
      },
      hooks,
    );
    deps.deliveriesDue.notify();
    return detail;
  }

  return { create, get, list, remove, listDeliveries, getDelivery, retryDelivery };
}
export type WebhooksService = ReturnType<typeof createWebhooksService>;
