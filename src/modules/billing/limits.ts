import type { Db } from '../../db/dialect.js';
import type { SubscriptionsTable } from '../../db/types.js';
import { AppError } from '../../kernel/errors.js';
import type { Tenant } from '../../kernel/principal.js';
import { billingRepository as repo } from './billing.repository.js';
import type { BillingDeps } from './billing-deps.js';
import { periodAt } from './periods.js';
import type { SubscriptionState } from './subscription-state.js';

/** What a plan allows (docs/billing.md): the free cap's numbers for http/plan-cap.ts, and the limits on creations. */
export function createPlanLimits(deps: BillingDeps, state: SubscriptionState) {
  const { db, clock } = deps;
  const { planOf, planNow } = state;
  return {
    /**
     * The hard cap of a workspace's plan at `t` (docs/billing.md#the-free-cap): its current period,
     * the cap (null: the plan has none), and the billable requests written so far in the period.
     */
    async capOf(
      workspaceId: string,
      t: number,
    ): Promise<{
      limit: number | null;
      periodStart: number;
      periodEnd: number;
      billable: number;
    } | null> {
      const sub = await repo.subscription(db, workspaceId);
      if (!sub) return null;
      const plan = planOf(planNow(sub, t));
      const period = periodAt(Date.parse(sub.anchor_at), t);
      // A pending downgrade ends the period's plan at its end anyway; the cap is re-read then.
      const limit = deps.enforceLimits && plan.hard_cap ? plan.included_requests : null;
      const billable = limit === null ? 0 : await deps.usage.billableCount(workspaceId, period.start, period.end);
      return { limit, periodStart: period.start, periodEnd: period.end, billable };
    },

    /**
     * Refuses a resource or webhook just created in a live environment beyond its plan's limit: 403
     * plan_limit_exceeded naming the limit (docs/billing.md#plan-limits), and the change rolls back. Test
     * environments are never limited. Takes the subscription's row lock (then reads the plan again and counts, the
     * new one included) only when the plan has a limit, so two creations cannot both take the last place, nor a
     * creation pass a downgrade that counted before it.
     */
    async checkCreated(trx: Db, tenant: Tenant, what: 'resources' | 'webhooks'): Promise<void> {
      if (!deps.enforceLimits || tenant.env !== 'live') return;
      const maxOf = (sub: SubscriptionsTable) => {
        const plan = planOf(planNow(sub, clock.now()));
        return { plan, max: what === 'resources' ? plan.max_resources : plan.max_webhooks };
      };
      const unlocked = await repo.subscription(trx, tenant.workspaceId);
      if (!unlocked || maxOf(unlocked).max === null) return;
      const sub = await repo.subscription(trx, tenant.workspaceId, true);
      if (!sub) return;
      const { plan, max } = maxOf(sub);
      if (max === null) return;
      const n = (await deps.counts[what](tenant, trx)) - 1;
      if (n >= max) {
        const limit = what === 'resources' ? 'max_resources' : 'max_webhooks';
        throw new AppError(
          403,
          'plan_limit_exceeded',
          `Plan limit ${limit} reached: the ${plan.name} plan allows ${max} ${what} per environment and the live environment has ${n}. Delete one or move to a larger plan.`,
        );
      }
    },
  };
}
