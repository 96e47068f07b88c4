import type { Db } from '../../db/dialect.js';
import type { Clock } from '../../kernel/clock.js';
import type { Tenant } from '../../kernel/principal.js';
import type { WriteRunner, WriteTx } from '../auth/write-runner.js';
import type { BillingNotice } from '../notifications/notifications.service.js';
import type { UsageService } from '../usage/usage.service.js';
import type { Plan } from './plans.js';

/** What the billing service is given (src/services.ts), shared by its parts. */
export interface BillingDeps {
  db: Db;
  clock: Clock;
  writeAs: WriteRunner;
  plans: readonly Plan[];
  usage: Pick<UsageService, 'billableCount'>;
  /** What a downgrade is checked against: the live environment's resources and webhooks. */
  counts: { resources(t: Tenant, d: Db): Promise<number>; webhooks(t: Tenant, d: Db): Promise<number> };
  /** Locks the workspace's row until `trx` ends (workspaces module): serialises creations against a plan limit. */
  lockWorkspace(trx: Db, workspaceId: string): Promise<void>;
  /** PLAN_LIMITS=on: creations are checked against the plan (checkCreate); off: never refused. */
  enforceLimits: boolean;
  /** Writes a usage or invoice notification to the admins in `trx` (the notifications service). */
  notify?: (trx: WriteTx, notice: BillingNotice) => Promise<void>;
}
