import type { BillingDeps } from './billing-deps.js';
import { createInvoicing } from './invoicing.js';
import { createPlanLimits } from './limits.js';
import { createPlanChanges } from './plan-changes.js';
import { createSubscriptionState } from './subscription-state.js';
import { createUsageNotices } from './usage-notices.js';

export type { BillingDeps } from './billing-deps.js';
export type { PlanChange } from './plan-changes.js';

/**
 * Billing (docs/billing.md): plans, subscriptions and plan changes (plan-changes.ts), the free cap
 * and plan limits (limits.ts), invoices (invoicing.ts) and usage notices (usage-notices.ts), over one
 * reading of a workspace's subscription (subscription-state.ts). One service to the rest of the code.
 */
export function createBillingService(deps: BillingDeps) {
  const state = createSubscriptionState(deps);
  return {
    ...createPlanChanges(deps, state),
    ...createPlanLimits(deps, state),
    ...createInvoicing(deps, state),
    ...createUsageNotices(deps, state),
  };
}
export type BillingService = ReturnType<typeof createBillingService>;
