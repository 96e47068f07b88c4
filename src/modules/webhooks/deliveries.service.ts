import type { Db, Dialect } from '../../db/dialect.js';
import type { DeliveryStatus } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import type { Env } from '../../kernel/environments.js';
import { ConflictError, NotFoundError } from '../../kernel/errors.js';
import { isId } from '../../kernel/ids.js';
import { type Principal, tenantOf } from '../../kernel/principal.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import type { Unit } from '../../platform/unit-of-work.js';
import { deliveriesRepository as repo, toDelivery } from './deliveries.repository.js';
import type { Outbox } from './outbox.js';
import {
  type BulkRetryInput,
  DELIVERY_STATUSES,
  type Delivery,
  type DeliveryDetail,
  type DeliveryFilter,
  type DeliverySummary,
  SUMMARY_WINDOWS,
  type SummaryWindow,
} from './webhooks.schemas.js';

const HOUR = 3600_000;

import { assertEnabled, type WebhooksService } from './webhooks.service.js';

/** The delivery log (per endpoint and across the environment) and manual resends (docs/api.md#webhook-deliveries, #webhooks). */
export function createDeliveriesService(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  outbox: Pick<Outbox, 'due'>;
  webhooks: Pick<WebhooksService, 'findOrThrow'>;
}) {
  const { db, dialect, clock } = deps;
  const { findOrThrow } = deps.webhooks;

  /** One endpoint's log, oldest first, optionally in one state. Throws NotFoundError. */
  async function listForWebhook(
    principal: Principal,
    webhookId: string,
    status: DeliveryStatus | undefined,
    page: PageRequest,
  ): Promise<Page<Delivery>> {
    await findOrThrow(db, principal, webhookId);
    const p = await repo.list(db, webhookId, status, page);
    return { ...p, items: p.items.map(toDelivery) };
  }

  /** Every delivery of the caller's workspace and environment that matches the filter. */
  async function list(principal: Principal, filter: DeliveryFilter, page: PageRequest): Promise<Page<Delivery>> {
    // Another tenant's (or no) endpoint matches nothing: an empty page, as for any filter.
    if (filter.webhook_id && !(await inScope(principal, filter.webhook_id))) {
      return { items: [], total: 0, limit: page.limit, offset: page.afterOffset ?? page.offset, nextCursor: null };
    }
    const p = await repo.listInScope(db, tenantOf(principal), filter, page);
    return { ...p, items: p.items.map(toDelivery) };
  }

  /**
   * The overview's delivery health: deliveries of the caller's workspace and environment created in the
   * last `window`, per period (1 h, 6 h or 1 day, the last ending with the current hour) and state,
   * zeros filled in, the success rate over the window, and the newest failures.
   */
  async function summary(principal: Principal, window: SummaryWindow): Promise<DeliverySummary> {
    const tenant = tenantOf(principal);
    const now = clock.now();
    const { periods, hours } = SUMMARY_WINDOWS[window];
    const period = hours * HOUR;
    const end = (Math.floor(now / HOUR) + 1) * HOUR;
    const first = end - periods * period;
    const starts = Array.from({ length: periods }, (_, i) => isoAt(first + i * period));
    const [counts, failed] = await Promise.all([
      repo.periodCounts(db, dialect, tenant, starts, isoAt(end)),
      repo.latestFailed(db, tenant, 10),
    ]);
    const totals = { succeeded: 0, failed: 0, pending: 0, cancelled: 0 };
    const series = counts.map((c) => {
      const bucket = {
        start: c.start,
        succeeded: Number(c.succeeded),
        failed: Number(c.failed),
        pending: Number(c.pending),
        cancelled: Number(c.cancelled),
      };
      for (const k of DELIVERY_STATUSES) totals[k] += bucket[k];
      return bucket;
    });
    const finished = totals.succeeded + totals.failed;
    return {
      window,
      since: starts[0] as string,
      until: isoAt(now),
      period_hours: hours,
      totals,
      success_rate: finished === 0 ? null : totals.succeeded / finished,
      series,
      recent_failures: failed.map(toDelivery),
    };
  }

  async function inScope(principal: Principal, webhookId: string): Promise<boolean> {
    try {
      await findOrThrow(db, principal, webhookId);
      return true;
    } catch (err) {
      if (err instanceof NotFoundError) return false;
      throw err;
    }
  }

  async function get(principal: Principal, webhookId: string, id: string): Promise<DeliveryDetail> {
    await findOrThrow(db, principal, webhookId);
    const row = isId('delivery', id) ? await repo.find(db, webhookId, id) : undefined;
    if (!row) throw new NotFoundError('delivery');
    return repo.detail(db, row);
  }

  /**
   * Manual resend: one more attempt now, whatever the delivery's state. An attempt in flight is a
   * 409 delivery_in_progress (retry once it has finished); a disabled endpoint 409 webhook_disabled.
   */
  async function retry(u: Unit<Principal>, webhookId: string, id: string): Promise<DeliveryDetail> {
    const principal = u.actor;
    return u.run(async (c) => {
      const { trx, audit } = c;
      assertEnabled(await findOrThrow(trx, principal, webhookId, true));
      const found = isId('delivery', id) ? await repo.find(trx, webhookId, id) : undefined;
      if (!found) throw new NotFoundError('delivery');
      const now = isoAt(clock.now());
      if (found.status === 'pending' && found.lease_until !== null && found.lease_until >= now) {
        throw new ConflictError('delivery_in_progress', 'An attempt of this delivery is running; retry when it ends.');
      }
      await repo.requeue(trx, id, now);
      await deps.outbox.due(c, 1);
      audit.record({
        action: 'delivery.retried',
        target: { type: 'delivery', id },
        env: principal.env,
        changes: {
          ...(found.status === 'pending' ? {} : { status: { before: found.status, after: 'pending' } }),
          requeued_at: { before: null, after: now },
        },
      });
      // Read in the transaction: the response is what this change committed (and what a replay sends).
      return repo.detail(trx, (await repo.find(trx, webhookId, id)) as NonNullable<typeof found>);
    });
  }

  /**
   * Bulk resend: every delivery of the endpoint in `status` (default `failed`) created at or after
   * `since` gets one more attempt, queued by one statement in one transaction. Returns how many.
   */
  async function retryMatching(
    u: Unit<Principal>,
    webhookId: string,
    input: BulkRetryInput,
  ): Promise<{ requeued: number }> {
    const principal = u.actor;
    return u.run(async (c) => {
      const { trx, audit } = c;
      assertEnabled(await findOrThrow(trx, principal, webhookId, true));
      const n = await repo.requeueMatching(trx, webhookId, {
        status: input.status ?? 'failed',
        since: new Date(input.since).toISOString(),
        now: isoAt(clock.now()),
      });
      await deps.outbox.due(c, n);
      // One entry for the bulk resend, on the endpoint, when it requeued anything.
      if (n > 0) {
        audit.record({
          action: 'delivery.retried',
          target: { type: 'webhook', id: webhookId },
          env: principal.env,
          changes: {
            requeued: { before: null, after: n },
            status: { before: input.status ?? 'failed', after: 'pending' },
          },
        });
      }
      return { requeued: n };
    });
  }

  /** Deliveries waiting for an attempt, across every workspace: GET /metrics' queue depth (http/metrics.ts). */
  const pendingCount = () => repo.pendingCount(db);

  /** A batch of the workspace's deliveries of the last `days` days after `after` (an id), oldest first: an export's walk. */
  async function exportBatch(workspaceId: string, env: Env, after: string | null, limit: number, days = 30) {
    const since = isoAt(deps.clock.now() - days * 86_400_000);
    const rows = await repo.exportBatch(db, workspaceId, env, since, after, limit);
    return { rows: rows.map((r) => ({ ...toDelivery(r), env: r.env })), next: rows.at(-1)?.id ?? null };
  }

  return { listForWebhook, list, summary, get, retry, retryMatching, pendingCount, exportBatch };
}
export type DeliveriesService = ReturnType<typeof createDeliveriesService>;
