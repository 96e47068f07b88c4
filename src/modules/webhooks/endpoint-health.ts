import type { WebhooksTable } from '../../db/types.js';
import type { Change, WriteTx } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import type { AttemptResult } from '../delivery-engine/claims.js';
import { deliveriesRepository } from './deliveries.repository.js';
import { webhooksRepository } from './webhooks.repository.js';

/** docs/api.md#endpoint-health: an endpoint is disabled only after at least this many failed attempts… */
export const MIN_FAILED_ATTEMPTS = 10;
/** …and at most one "failing" notification is written per endpoint per this long. */
export const FAILING_NOTICE_EVERY_MS = 24 * 3_600_000;

export type EndpointNoticeKind = 'failing' | 'disabled' | 'recovered';

type HealthPatch = Parameters<typeof webhooksRepository.updateHealth>[2];

/**
 * Endpoint health (docs/api.md#endpoint-health), applied by the delivery worker's cycle to the
 * attempts it writes. A failed attempt starts (or continues) the endpoint's failing window; any
 * success ends it. An endpoint whose attempts have all failed for `disableAfterMs` (measured from
 * the first failure to the current attempt, inclusive) with at least MIN_FAILED_ATTEMPTS of them is
 * disabled with reason `failing` and its pending deliveries are cancelled.
 */
export function createEndpointHealth(deps: { disableAfterMs: number }) {
  /** Locks the endpoints of `outcomes` (before their deliveries are written: the lock order of every writer). */
  function lock(trx: WriteTx, outcomes: AttemptResult[]): Promise<Map<string, WebhooksTable>> {
    const ids = [...new Set(outcomes.filter((o) => o.attempt !== null).map((o) => o.webhookId))].sort();
    return webhooksRepository.lockMany(trx, ids);
  }

  /**
   * Applies the written attempts, in order, to their endpoints locked by `lock`, in the worker's change: a disable
   * is recorded on its audit trail (docs/api.md#audit-log: `webhook.disabled`, by the worker, reason `failing`), and
   * what people are told is emitted (`endpoint.health`), with the receivers' change of a disabled endpoint.
   */
  async function apply(c: Change, rows: Map<string, WebhooksTable>, written: AttemptResult[]): Promise<void> {
    const { trx, audit } = c;
    const disabledIn = new Set<string>();
    for (const r of written) {
      const row = rows.get(r.webhookId);
      if (row?.status !== 'enabled' || r.attempt === null) continue;
      const at = r.attempt.attempted_at;
      const { patch, notice } = r.status === 'succeeded' ? onSuccess(row) : onFailure(row, at, r.status === 'failed');
      if (Object.keys(patch).length === 0) continue;
      const next: WebhooksTable = { ...row, ...patch };
      rows.set(row.id, next);
      await webhooksRepository.updateHealth(trx, row.id, patch);
      if (patch.status === 'disabled') {
        disabledIn.add(row.workspace_id);
        await deliveriesRepository.cancelPending(trx, row.id, at);
        audit.record({
          workspaceId: row.workspace_id,
          action: 'webhook.disabled',
          target: { type: 'webhook', id: row.id },
          env: row.env,
          changes: changesOf(
            { status: row.status, disabled_reason: row.disabled_reason ?? null },
            { status: next.status, disabled_reason: next.disabled_reason ?? null },
          ),
        });
      }
      if (notice) await c.emit({ type: 'endpoint.health', kind: notice, webhook: next, at });
    }
    // Last, in workspace order: two cycles disabling endpoints of the same workspaces take their tokens' row locks in one order.
    for (const workspaceId of [...disabledIn].sort()) await c.emit({ type: 'receivers.changed', workspaceId });
  }

  function onSuccess(row: WebhooksTable): { patch: HealthPatch; notice?: EndpointNoticeKind } {
    const patch: HealthPatch = {};
    if (row.failing_since != null || (row.failed_attempts ?? 0) !== 0) {
      patch.failing_since = null;
      patch.failed_attempts = 0;
    }
    if (row.unhealthy_notified_at == null) return { patch };
    return { patch: { ...patch, unhealthy_notified_at: null }, notice: 'recovered' };
  }

  function onFailure(
    row: WebhooksTable,
    at: string,
    finalAttempt: boolean,
  ): { patch: HealthPatch; notice?: EndpointNoticeKind } {
    const since = row.failing_since ?? at;
    const failed = (row.failed_attempts ?? 0) + 1;
    const patch: HealthPatch = { failing_since: since, failed_attempts: failed };
    const atMs = Date.parse(at);
    if (failed >= MIN_FAILED_ATTEMPTS && atMs - Date.parse(since) >= deps.disableAfterMs) {
      const disable: HealthPatch = { status: 'disabled', disabled_reason: 'failing', updated_at: at };
      return { patch: { ...patch, ...disable, unhealthy_notified_at: at }, notice: 'disabled' };
    }
    const last = row.failing_notified_at;
    if (finalAttempt && (last == null || atMs - Date.parse(last) >= FAILING_NOTICE_EVERY_MS)) {
      return { patch: { ...patch, failing_notified_at: at, unhealthy_notified_at: at }, notice: 'failing' };
    }
    return { patch };
  }

  return { lock, apply };
}
export type EndpointHealth = ReturnType<typeof createEndpointHealth>;

/** The health fields a hand-made enable resets: a fresh window (docs/api.md#endpoint-health). */
export const FRESH_WINDOW = { failing_since: null, failed_attempts: 0 } as const;
