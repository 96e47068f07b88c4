import type { SubscriptionChangesTable } from '../../db/types.js';
import { isoAt } from '../../kernel/clock.js';
import { ConflictError, fieldError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import type { Principal, Tenant } from '../../kernel/principal.js';
import { requireAdmin } from '../../kernel/principal.js';
import type { Change, Unit, WriteTx } from '../../platform/unit-of-work.js';
import { billingRepository as repo } from './billing.repository.js';
import type { PlanChangeOut, Subscription } from './billing.schemas.js';
import type { BillingDeps } from './billing-deps.js';
import { paymentsRepository } from './payments.repository.js';
import { periodAt, proration } from './periods.js';
import type { Plan } from './plans.js';
import type { SubscriptionState } from './subscription-state.js';

export type PlanChange =
  | { change: 'upgraded'; from: string; to: string; proration_cents: number }
  | { change: 'downgrade_scheduled'; from: string; to: string; effective_at: string }
  | { change: 'downgrade_cancelled'; plan: string }
  | { change: 'unchanged'; plan: string };

/** Plans and subscriptions (docs/billing.md#plan-changes): a workspace's start, its subscription, plan changes. */
export function createPlanChanges(deps: BillingDeps, state: SubscriptionState) {
  const { db, clock } = deps;
  const { planOf, planNow, subscriptionOrThrow, applyDueDowngrade, compute, recordPlanChange } = state;

  const service = {
    plans: (): readonly Plan[] => deps.plans,

    /** Starts a workspace on `free` in the change that creates it (the subscriber's `workspace.created`). */
    async start(trx: WriteTx, workspaceId: string, createdAt: string): Promise<void> {
      planOf('free');
      await repo.insertSubscription(trx, {
        workspace_id: workspaceId,
        plan: 'free',
        anchor_at: createdAt,
        pending_plan: null,
        pending_from: null,
        started_at: createdAt,
        created_at: createdAt,
        updated_at: createdAt,
      });
    },

    /** GET /v1/billing/subscription: plan, period, usage so far and the upcoming invoice (docs/billing.md). */
    async subscription(p: Principal): Promise<Subscription> {
      return service.subscriptionOf(p.workspaceId);
    },

    /** The same for a workspace (CLI `billing show`). */
    async subscriptionOf(workspaceId: string): Promise<Subscription> {
      const sub = await subscriptionOrThrow(db, workspaceId);
      const now = clock.now();
      const period = periodAt(Date.parse(sub.anchor_at), now);
      const [changes, billable] = await Promise.all([
        repo.changes(db, workspaceId),
        deps.usage.billableCount(workspaceId, period.start, period.end),
      ]);
      const plan = planOf(planNow(sub, now));
      const pending =
        sub.pending_plan !== null && sub.pending_from !== null && Date.parse(sub.pending_from) > now
          ? { plan: sub.pending_plan, effective_at: isoAt(Date.parse(sub.pending_from)) }
          : null;
      return {
        workspace_id: workspaceId,
        plan,
        current_period: { start: isoAt(period.start), end: isoAt(period.end) },
        usage: { billable_requests: billable, included_requests: plan.included_requests },
        pending_change: pending,
        upcoming_invoice: await compute(sub, changes, period, billable),
      };
    },

    /**
     * Changes a workspace's plan (docs/billing.md#plan-changes): a dearer plan at once, with
     * the base fee's difference prorated by the second; a cheaper one (or one of the same price) at
     * the period's end, refused with 409 downgrade_blocked when the live environment holds more
     * resources or webhooks than it allows; the current plan cancels a pending downgrade. With payments on, a move
     * from a free plan to a paid one needs a card on file (409 payment_method_required, nothing changed) unless
     * `withoutCard` (the operator's `wsvc billing set-plan --without-card`: its invoices are then settled by hand).
     */
    setPlan(u: Unit, workspaceId: string, planId: string, opts: { withoutCard?: boolean } = {}): Promise<PlanChange> {
      return u.run((c) => setPlanIn(c, workspaceId, planId, opts.withoutCard === true));
    },

    /** The console's billing page of a workspace (where an admin adds a card), as a full URL. */
    billingPage: (workspaceId: string): string => `${deps.consoleUrl()}/console/w/${workspaceId}/live/settings/billing`,

    /**
     * The console's "Change plan" (POST /console/api/billing/plan): admins only (403 otherwise,
     * nothing changed), as the signed-in person, with setPlan's rules.
     */
    async changePlan(u: Unit<Principal>, planId: string): Promise<PlanChangeOut> {
      const p = u.actor;
      requireAdmin(p);
      const c = await service.setPlan(u, p.workspaceId, planId);
      switch (c.change) {
        case 'upgraded':
          return { change: c.change, from: c.from, to: c.to, proration_cents: c.proration_cents, effective_at: null };
        case 'downgrade_scheduled':
          return { change: c.change, from: c.from, to: c.to, proration_cents: null, effective_at: c.effective_at };
        default:
          return { change: c.change, from: null, to: c.plan, proration_cents: null, effective_at: null };
      }
    },
  };

  /**
   * Payments with Stripe: a move from a free plan (the plan in force, a due downgrade applied) to a paid one needs a
   * card first (409 payment_method_required, nothing changed), through every door: the console's "Change plan" and
   * `wsvc billing set-plan` (which words its own message and has `--without-card`).
   */
  async function requireCard(trx: WriteTx, workspaceId: string, current: Plan, target: Plan): Promise<void> {
    if (deps.gateway === null || target.base_price_cents === 0 || current.base_price_cents > 0) return;
    if ((await paymentsRepository.customer(trx, workspaceId))?.payment_method_id) return;
    throw new ConflictError(
      'payment_method_required',
      `Add a card on the billing page before moving to ${target.name}: a paid plan is charged to the workspace's card.`,
    );
  }

  async function setPlanIn(c: Change, workspaceId: string, planId: string, withoutCard: boolean): Promise<PlanChange> {
    const { trx, audit } = c;
    const target = deps.plans.find((p) => p.id === planId);
    if (!target) {
      throw fieldError('plan', 'invalid_value', `plan must be one of ${deps.plans.map((p) => p.id).join(', ')}.`);
    }
    const t = clock.now();
    const sub = await applyDueDowngrade(trx, audit, await subscriptionOrThrow(trx, workspaceId, true), t);
    const current = planOf(sub.plan);
    if (!withoutCard) await requireCard(trx, workspaceId, current, target);
    const period = periodAt(Date.parse(sub.anchor_at), t);
    const now = isoAt(t);
    const change = (kind: SubscriptionChangesTable['kind'], to: string, prorated = { s: 0, total: 0, cents: 0 }) =>
      repo.insertChange(trx, {
        id: newId('subscriptionChange', t),
        workspace_id: workspaceId,
        kind,
        from_plan: sub.plan,
        to_plan: to,
        period_start: isoAt(period.start),
        effective_at: kind === 'downgrade_scheduled' ? isoAt(period.end) : now,
        seconds_left: prorated.s,
        period_seconds: prorated.total,
        proration_cents: prorated.cents,
        created_at: now,
      });
    if (target.id === current.id) {
      if (sub.pending_plan === null) return { change: 'unchanged', plan: current.id };
      await change('downgrade_cancelled', current.id);
      await repo.updateSubscription(trx, workspaceId, { pending_plan: null, pending_from: null, updated_at: now });
      recordPlanChange(audit, sub, { plan: sub.plan, pending_plan: null, pending_from: null });
      return { change: 'downgrade_cancelled', plan: current.id };
    }
    if (target.base_price_cents > current.base_price_cents) {
      const pr = proration(period, t, current.base_price_cents, target.base_price_cents);
      await change('upgrade', target.id, { s: pr.secondsLeft, total: pr.periodSeconds, cents: pr.amountCents });
      await repo.updateSubscription(trx, workspaceId, {
        plan: target.id,
        pending_plan: null,
        pending_from: null,
        updated_at: now,
      });
      recordPlanChange(audit, sub, { plan: target.id, pending_plan: null, pending_from: null });
      return { change: 'upgraded', from: current.id, to: target.id, proration_cents: pr.amountCents };
    }
    const live: Tenant = { workspaceId, env: 'live' };
    const resources = await deps.counts.resources(live, trx);
    const webhooks = await deps.counts.webhooks(live, trx);
    const over: string[] = [];
    if (target.max_resources !== null && resources > target.max_resources) {
      over.push(`resources: ${resources} in the live environment, ${target.name} allows ${target.max_resources}`);
    }
    if (target.max_webhooks !== null && webhooks > target.max_webhooks) {
      over.push(`webhooks: ${webhooks} in the live environment, ${target.name} allows ${target.max_webhooks}`);
    }
    if (over.length > 0) {
      throw new ConflictError(
        'downgrade_blocked',
        `Cannot move to ${target.name}: ${over.join('; ')}. Delete the excess first.`,
      );
    }
    await change('downgrade_scheduled', target.id);
    await repo.updateSubscription(trx, workspaceId, {
      pending_plan: target.id,
      pending_from: isoAt(period.end),
      updated_at: now,
    });
    recordPlanChange(audit, sub, { plan: sub.plan, pending_plan: target.id, pending_from: isoAt(period.end) });
    return { change: 'downgrade_scheduled', from: current.id, to: target.id, effective_at: isoAt(period.end) };
  }
  return service;
}
