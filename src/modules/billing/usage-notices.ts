import { isoAt } from '../../kernel/clock.js';
import type { Unit } from '../../platform/unit-of-work.js';
import { billingRepository as repo } from './billing.repository.js';
import type { BillingDeps } from './billing-deps.js';
import { periodAt } from './periods.js';
import type { SubscriptionState } from './subscription-state.js';

/** Usage notifications at these percentages of a period's included requests, once each (docs/billing.md#notifications). */
export const USAGE_THRESHOLDS = [50, 80, 100] as const;

/** The usage notices (docs/billing.md#notifications): the `billing-usage-notices` job. */
export function createUsageNotices(deps: BillingDeps, state: SubscriptionState) {
  const { db, clock } = deps;
  const { planNow } = state;
  return {
    /**
     * The periodic job `billing-usage-notices`: for each workspace whose plan (in force now) has
     * included requests, records every threshold of USAGE_THRESHOLDS its current period's billable
     * requests have reached and not yet recorded, and notifies the admins once for the highest of
     * them, in that transaction. The primary key of usage_notices makes it once per period each,
     * also with two workers (the second finds the rows and writes nothing). Returns how many
     * notifications it wrote (one per workspace and run at most).
     */
    async notifyUsage(u: Unit): Promise<number> {
      const t = clock.now();
      let notified = 0;
      for (const sub of await repo.allSubscriptions(db)) {
        const plan = deps.plans.find((p) => p.id === planNow(sub, t));
        const included = plan?.included_requests ?? null;
        if (!plan || included === null || included <= 0) continue;
        const period = periodAt(Date.parse(sub.anchor_at), t);
        const periodStart = isoAt(period.start);
        const billable = await deps.usage.billableCount(sub.workspace_id, period.start, period.end);
        // Integer arithmetic: 49.99 % is not 50 %.
        const reached = USAGE_THRESHOLDS.filter((th) => billable * 100 >= th * included);
        if (reached.length === 0) continue;
        const done = await repo.usageNotices(db, sub.workspace_id, periodStart);
        const fresh = reached.filter((th) => !done.includes(th));
        if (fresh.length === 0) continue;
        const wrote = await u.run(async (c) => {
          const { trx } = c;
          const recorded: number[] = [];
          for (const threshold of fresh) {
            const row = {
              workspace_id: sub.workspace_id,
              period_start: periodStart,
              threshold,
              billable_requests: billable,
              included_requests: included,
              created_at: isoAt(t),
            };
            if (await repo.insertUsageNotice(trx, row)) recorded.push(threshold);
          }
          const top = recorded.at(-1);
          if (top === undefined) return false;
          await c.emit({
            type: 'billing.notice',
            notice: {
              type: 'usage.threshold',
              workspaceId: sub.workspace_id,
              thresholds: recorded,
              data: {
                threshold: top,
                billable_requests: billable,
                included_requests: included,
                plan: plan.id,
                plan_name: plan.name,
                hard_cap: plan.hard_cap,
                period_start: periodStart,
                period_end: isoAt(period.end),
                at: isoAt(t),
              },
            },
          });
          return true;
        });
        if (wrote) notified++;
      }
      return notified;
    },
  };
}
