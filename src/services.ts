import type { Config } from './config.js';
import type { Storage } from './db/database.js';
import type { Clock } from './lib/clock.js';
import { createSignal } from './lib/signal.js';
import { createWriteRunner, type PrincipalChecks } from './modules/auth/write-runner.js';
import { createDeliveryWorker, type WorkerLogger } from './modules/delivery/delivery.worker.js';
import { createEventsService } from './modules/events/events.service.js';
import { createIdempotencyService } from './modules/idempotency/idempotency.service.js';
import { apiKeyCheck } from './modules/keys/key-check.js';
import { createKeyManagementService } from './modules/keys/key-management.service.js';
import { createKeysService } from './modules/keys/keys.service.js';
import { createOutbox } from './modules/outbox/outbox.service.js';
import { createResourcesService } from './modules/resources/resources.service.js';
import { systemCheck } from './modules/users/user-check.js';
import { createUsersService } from './modules/users/users.service.js';
import { createDeliveriesService } from './modules/webhooks/deliveries.service.js';
import { createWebhooksService } from './modules/webhooks/webhooks.service.js';
import { createWorkspacesService } from './modules/workspaces/workspaces.service.js';

/** Work the worker process repeats (retention purges). */
export interface PeriodicJob {
  name: string;
  everyMs: number;
  /** Returns how many records it removed. */
  run(): Promise<number>;
}

const quiet: WorkerLogger = { info() {}, warn() {} };

/**
 * Wires every service once, the delivery worker and the periodic jobs included; routes, the CLI and
 * the worker all call these (STYLE 1, 2). Nothing runs until a caller starts it (worker.ts).
 */
export function createServices(deps: {
  storage: Storage;
  clock: Clock;
  config: Config;
  /** Where the delivery worker logs (default: nowhere). */
  log?: WorkerLogger;
  /** DNS resolution for the webhook URL check at webhook creation (tests inject one); the system's by default. */
  resolveHost?: (host: string) => Promise<string[]>;
}) {
  const { db, dialect } = deps.storage;
  const clock = deps.clock;
  // Rung after a commit that queued deliveries; this process's delivery worker listens.
  const deliveriesDue = createSignal();
  // The write-time re-check per kind of principal; the console registers `session` beside these.
  const checks: PrincipalChecks = { api_key: apiKeyCheck(dialect, clock), system: systemCheck(dialect) };
  const writeAs = createWriteRunner({ db, dialect, checks });
  const keys = createKeysService({ db, dialect, clock });
  const keyManagement = createKeyManagementService({ db, dialect, clock, checks, keys });
  const users = createUsersService({ db, dialect, clock, writeAs });
  const events = createEventsService({ db, dialect, clock });
  const outbox = createOutbox({ dialect, deliveriesDue });
  const resources = createResourcesService({ db, clock, writeAs, outbox, events });
  const webhooks = createWebhooksService({
    db,
    dialect,
    clock,
    writeAs,
    deliveriesDue,
    urlGuard: { allowInsecure: deps.config.WEBHOOK_ALLOW_INSECURE_URLS, resolve: deps.resolveHost },
    outbox,
  });
  const deliveries = createDeliveriesService({ db, dialect, clock, writeAs, deliveriesDue, webhooks });
  const idempotency = createIdempotencyService({ db, dialect, clock });
  const workspaces = createWorkspacesService({ db, dialect, clock, users, keys });
  const delivery = createDeliveryWorker({
    db,
    dialect,
    clock,
    config: deps.config,
    deliveriesDue,
    log: deps.log ?? quiet,
  });
  const jobs: PeriodicJob[] = [
    { name: 'purge events and delivery logs older than 30 days', everyMs: 60 * 60_000, run: events.purgeExpired },
    { name: 'purge idempotency records older than 24 h', everyMs: 10 * 60_000, run: idempotency.purgeExpired },
  ];
  return {
    keys,
    keyManagement,
    users,
    resources,
    events,
    webhooks,
    deliveries,
    workspaces,
    idempotency,
    delivery,
    jobs,
    deliveriesDue,
    checks,
    writeAs,
  };
}
export type Services = ReturnType<typeof createServices>;
