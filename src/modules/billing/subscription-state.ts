import type { Db } from '../../db/dialect.js';
import type { SubscriptionChangesTable, SubscriptionsTable } from '../../db/types.js';
import type { AuditTrail } from '../../kernel/audit-actions.js';
import { isoAt } from '../../kernel/clock.js';
import { AppError, NotFoundError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import type { WriteTx } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import { billingRepository as repo } from './billing.repository.js';
import type { UpcomingInvoice } from './billing.schemas.js';
import type { BillingDeps } from './billing-deps.js';
import { invoiceLines, type PlanEvent } from './invoice.js';
import type { Period } from './periods.js';
import type { Plan } from './plans.js';

/**
 * A workspace's subscription as the other parts of billing read it (docs/billing.md): the plan in
 * force at a time, a due downgrade moved into the plan, and what a period comes to.
 */
export function createSubscriptionState(deps: Pick<BillingDeps, 'plans'>) {
  function planOf(id: string): Plan {
    const plan = deps.plans.find((p) => p.id === id);
    if (!plan) {
      throw new AppError(
        409,
        'plan_unknown',
        `This workspace is on the plan "${id}", which PLANS_FILE no longer defines; add it back or move the workspace to another plan.`,
      );
    }
    return plan;
  }

  /** subscription_changes and a pending downgrade as plan events, in order of time. */
  function eventsOf(sub: SubscriptionsTable, changes: SubscriptionChangesTable[]): PlanEvent[] {
    const events: PlanEvent[] = [];
    for (const c of changes) {
      if (c.kind === 'upgrade') {
        events.push({
          kind: 'upgrade',
          at: Date.parse(c.effective_at),
          from: c.from_plan,
          to: c.to_plan,
          periodStart: Date.parse(c.period_start),
          secondsLeft: Number(c.seconds_left),
          periodSeconds: Number(c.period_seconds),
          prorationCents: Number(c.proration_cents),
        });
      } else if (c.kind === 'downgrade_applied') {
        events.push({ kind: 'downgrade', at: Date.parse(c.effective_at), from: c.from_plan, to: c.to_plan });
      }
    }
    if (sub.pending_plan !== null && sub.pending_from !== null) {
      events.push({ kind: 'downgrade', at: Date.parse(sub.pending_from), from: sub.plan, to: sub.pending_plan });
    }
    return events;
  }

  /** The plan in force at `t`: the stored one, or the pending downgrade once its time has come. */
  function planNow(sub: SubscriptionsTable, t: number): string {
    return sub.pending_plan !== null && sub.pending_from !== null && Date.parse(sub.pending_from) <= t
      ? sub.pending_plan
      : sub.plan;
  }

  /** `plan.changed` on the workspace's subscription: its plan and pending downgrade before and after (unchanged: nothing). */
  function recordPlanChange(
    audit: AuditTrail,
    before: Pick<SubscriptionsTable, 'workspace_id' | 'plan' | 'pending_plan' | 'pending_from'>,
    after: Pick<SubscriptionsTable, 'plan' | 'pending_plan' | 'pending_from'>,
  ): void {
    const shown = (s: typeof after) => ({
      plan: s.plan,
      pending_plan: s.pending_plan,
      pending_from: s.pending_from === null ? null : isoAt(Date.parse(s.pending_from)),
    });
    const changes = changesOf(shown(before), shown(after));
    if (Object.keys(changes).length === 0) return;
    audit.record({
      action: 'plan.changed',
      workspaceId: before.workspace_id,
      target: { type: 'subscription', id: before.workspace_id },
      env: null,
      changes,
    });
  }

  async function subscriptionOrThrow(d: Db, workspaceId: string, lock = false): Promise<SubscriptionsTable> {
    const sub = await repo.subscription(d, workspaceId, lock);
    if (!sub) throw new NotFoundError('workspace');
    return sub;
  }

  /** Moves a downgrade whose period has ended into the plan (in the caller's transaction), recorded as `plan.changed`. */
  async function applyDueDowngrade(
    trx: WriteTx,
    audit: AuditTrail,
    sub: SubscriptionsTable,
    t: number,
  ): Promise<SubscriptionsTable> {
    if (sub.pending_plan === null || sub.pending_from === null || Date.parse(sub.pending_from) > t) return sub;
    const now = isoAt(t);
    await repo.insertChange(trx, {
      id: newId('subscriptionChange', t),
      workspace_id: sub.workspace_id,
      kind: 'downgrade_applied',
      from_plan: sub.plan,
      to_plan: sub.pending_plan,
      period_start: sub.pending_from,
      effective_at: sub.pending_from,
      seconds_left: 0,
      period_seconds: 0,
      proration_cents: 0,
      created_at: now,
    });
    const next = { plan: sub.pending_plan, pending_plan: null, pending_from: null, updated_at: now };
    await repo.updateSubscription(trx, sub.workspace_id, next);
    recordPlanChange(audit, sub, { ...sub, ...next });
    return { ...sub, ...next };
  }

  /** What `period` comes to with the changes and usage known now (the upcoming invoice, or the one being finalized). */
  async function compute(
    sub: SubscriptionsTable,
    changes: SubscriptionChangesTable[],
    period: Period,
    billable: number,
  ): Promise<UpcomingInvoice> {
    const { plan, lines, totalCents } = invoiceLines(period, eventsOf(sub, changes), sub.plan, billable, planOf);
    return {
      period_start: isoAt(period.start),
      period_end: isoAt(period.end),
      plan,
      billable_requests: billable,
      currency: 'usd',
      total_cents: totalCents,
      lines,
    };
  }

  return { planOf, planNow, subscriptionOrThrow, applyDueDowngrade, compute, recordPlanChange };
}
export type SubscriptionState = ReturnType<typeof createSubscriptionState>;
