import type { Db } from '../../db/dialect.js';
import type { Clock } from '../../kernel/clock.js';
import type { Tenant } from '../../kernel/principal.js';
import type { UsageService } from '../usage/usage.service.js';
import type { Plan } from './plans.js';
import type { PaymentGateway } from './stripe-gateway.js';

/** What the billing service is given (src/services.ts), shared by its parts. */
export interface BillingDeps {
  db: Db;
  clock: Clock;
  plans: readonly Plan[];
  usage: Pick<UsageService, 'billableCount'>;
  /** What a downgrade is checked against: the live environment's resources and webhooks. */
  counts: { resources(t: Tenant, d: Db): Promise<number>; webhooks(t: Tenant, d: Db): Promise<number> };
  /** PLAN_LIMITS=on: creations are checked against the plan (the subscriber's `resource.created`, `webhook.created`); off: never refused. */
  enforceLimits: boolean;
  /** Stripe (docs/billing.md#payments-with-stripe); null: payments are off and invoices are marked paid by hand. */
  gateway: PaymentGateway | null;
  /** DUNNING_SCHEDULE: days after an invoice's first failed charge at which it is charged again. */
  dunningDays: readonly number[];
  /** Where people reach the console (PUBLIC_URL): Checkout returns there. */
  consoleUrl: () => string;
}
