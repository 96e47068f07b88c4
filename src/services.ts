import type { Config } from './config.js';
import type { Storage } from './db/database.js';
import type { Clock } from './lib/clock.js';
import { createWriteRunner } from './modules/keys/actor.js';
import { createKeysService } from './modules/keys/keys.service.js';
import { createResourcesService } from './modules/resources/resources.service.js';
import { createUsersService } from './modules/users/users.service.js';
import { createWorkspacesService } from './modules/workspaces/workspaces.service.js';

/** Wires every service once; routes, the CLI and the worker all call these (STYLE 1, 2). */
export function createServices(deps: { storage: Storage; clock: Clock; config: Config }) {
  const { db, dialect } = deps.storage;
  const clock = deps.clock;
  const writeAs = createWriteRunner({ db, dialect });
  const keys = createKeysService({ db, dialect, clock });
  const users = createUsersService({ db, dialect, clock, writeAs });
  const resources = createResourcesService({ db, clock, writeAs });
  const workspaces = createWorkspacesService({ db, dialect, clock, users, keys });
  return { keys, users, resources, workspaces };
}
export type Services = ReturnType<typeof createServices>;
