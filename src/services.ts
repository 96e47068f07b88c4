import type { Config } from './config.js';
import type { Storage } from './db/database.js';
import type { Clock } from './lib/clock.js';
import { createSignal } from './lib/signal.js';
import { createWriteRunner, type PrincipalChecks } from './modules/auth/write-runner.js';
import { createEventsService } from './modules/events/events.service.js';
import { createIdempotencyService } from './modules/idempotency/idempotency.service.js';
import { apiKeyCheck, systemCheck } from './modules/keys/key-check.js';
import { createKeysService } from './modules/keys/keys.service.js';
import { createResourcesService } from './modules/resources/resources.service.js';
import { createUsersService } from './modules/users/users.service.js';
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
  const checks: PrincipalChecks = { api_key: apiKeyCheck(dialect), system: systemCheck(dialect) };
  const writeAs = createWriteRunner({ db, dialect, checks });
  const keys = createKeysService({ db, dialect, clock });
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
  });
  const idempotency = createIdempotencyService({ db, clock });
  const workspaces = createWorkspacesService({ db, dialect, clock, users, keys });
  return { keys, users, resources, events, webhooks, workspaces, idempotency, deliveriesDue, checks, writeAs };
}
export type Services = ReturnType<typeof createServices>;
