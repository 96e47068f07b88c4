import type { Subscriber } from '../../platform/unit-of-work.js';
import type { BillingDeps } from './billing-deps.js';
import { createInvoicing } from './invoicing.js';
import { createPlanLimits } from './limits.js';
import { createPayments } from './payments.js';
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
  const changes = createPlanChanges(deps, state);
  const limits = createPlanLimits(deps, state);
  const { reactivate, ...payments } = createPayments(deps);
  /**
   * Billing as a subscriber of changes (registered in src/services.ts): a new workspace starts on `free`; a
   * resource or webhook created beyond the plan's limit is refused.
   */
  const subscriber: Subscriber = {
    name: 'billing',
    on: {
      'workspace.created': (c, e) => changes.start(c.trx, e.workspaceId, e.at),
      'resource.created': (c, e) => limits.checkCreated(c.trx, e.tenant, 'resources'),
      'webhook.created': (c, e) => limits.checkCreated(c.trx, e.tenant, 'webhooks'),
      // Paying an invoice (by card, or marked paid) ends an unpaid subscription's 402s.
      'invoice.settled': async (c, e) => {
        if (e.status === 'paid') await reactivate(c, e.workspaceId, e.data.invoice_id, e.data.at);
      },
    },
  };
  return {
    subscriber,
    ...changes,
    capOf: limits.capOf,
    ...createInvoicing(deps, state),
    ...createUsageNotices(deps, state),
    ...payments,
  };
}
export type BillingService = ReturnType<typeof createBillingService>;
