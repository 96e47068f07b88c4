import { type Config, publicUrl } from './config.js';
import type { Storage } from './db/database.js';
import type { Clock } from './lib/clock.js';
import { createSignal } from './lib/signal.js';
import { createWriteRunner, type PrincipalChecks } from './modules/auth/write-runner.js';
import { createConsoleAuthService } from './modules/console-auth/console-auth.service.js';
import { createConsoleMembers } from './modules/console-auth/console-members.js';
import { sessionCheck } from './modules/console-auth/session-check.js';
import { createEventsService } from './modules/events/events.service.js';
import { createIdempotencyService } from './modules/idempotency/idempotency.service.js';
import { apiKeyCheck, systemCheck } from './modules/keys/key-check.js';
import { createKeyManagementService } from './modules/keys/key-management.service.js';
import { createKeysService } from './modules/keys/keys.service.js';
import { createResourcesService } from './modules/resources/resources.service.js';
import { createUsersService } from './modules/users/users.service.js';
import { createDeliveriesService } from './modules/webhooks/deliveries.service.js';
import { createWebhooksService } from './modules/webhooks/webhooks.service.js';
import { createWorkspacesService } from './modules/workspaces/workspaces.service.js';

/** Wires every service once; routes, the CLI and the worker all call these (STYLE 1, 2). */
export function createServices(deps: {
  storage: Storage;
  clock: Clock;
  config: Config;
  /** DNS resolution for the D19 check at webhook creation (tests inject one); the system's by default. */
  resolveHost?: (host: string) => Promise<string[]>;
}) {
  const { db, dialect } = deps.storage;
  const clock = deps.clock;
  // Rung after a commit that queued deliveries; this process's delivery worker listens.
  const deliveriesDue = createSignal();
  // The write-time re-check per kind of principal; the console registers `session` beside these.
  const checks: PrincipalChecks = {
    api_key: apiKeyCheck(dialect, clock),
    session: sessionCheck(dialect),
    system: systemCheck(dialect),
  };
  const writeAs = createWriteRunner({ db, dialect, checks });
  const keys = createKeysService({ db, dialect, clock });
  const keyManagement = createKeyManagementService({ db, dialect, clock, checks, keys });
  const users = createUsersService({ db, dialect, clock, writeAs });
  const events = createEventsService({ db, dialect, clock, deliveriesDue });
  const resources = createResourcesService({ db, clock, writeAs, events });
  const webhooks = createWebhooksService({
    db,
    dialect,
    clock,
    writeAs,
    deliveriesDue,
    urlGuard: { allowInsecure: deps.config.WEBHOOK_ALLOW_INSECURE_URLS, resolve: deps.resolveHost },
    events,
  });
  const deliveries = createDeliveriesService({ db, dialect, clock, writeAs, deliveriesDue, webhooks });
  const idempotency = createIdempotencyService({ db, clock });
  const consoleAuth = createConsoleAuthService({ db, dialect, clock, users, publicUrl: () => publicUrl(deps.config) });
  const consoleMembers = createConsoleMembers({ db, users });
  const workspaces = createWorkspacesService({ db, dialect, clock, users, keys, links: consoleAuth });
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
    consoleAuth,
    consoleMembers,
    deliveriesDue,
    checks,
    writeAs,
  };
}
export type Services = ReturnType<typeof createServices>;
