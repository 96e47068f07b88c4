import type { Storage } from '../db/database.js';
import type { Clock } from '../kernel/clock.js';
import { type SystemActor, systemActor } from '../kernel/principal.js';
import type { Unit } from '../platform/unit-of-work.js';
import type { Services } from '../services.js';

/**
 * Opens the configured database (migrated) and the services, runs `fn`, closes. The settings, storage
 * and services are loaded here, when a command runs, not when `wsvc` starts: `wsvc --help` and a usage
 * error never load them (src/cli/main.ts).
 */
export async function withServices<T>(
  fn: (s: Services, storage: Storage) => Promise<T>,
  opts: { clock?: Clock } = {},
): Promise<T> {
  const [
    { loadConfig },
    { openStorageFromConfig },
    { migrateToLatest },
    { openRedis, waitForRedis },
    { systemClock },
    { keyChangeAnnouncer },
    { createServices },
    { withServerUrl },
  ] = await Promise.all([
    import('../config.js'),
    import('../db/database.js'),
    import('../db/migrate.js'),
    import('../db/redis.js'),
    import('../kernel/clock.js'),
    import('../modules/keys/keys-epoch.js'),
    import('../services.js'),
    import('./server-url.js'),
  ]);
  // Links (set-password, invites) use the running server's URL when the command has no PORT/PUBLIC_URL.
  const config = withServerUrl(loadConfig());
  const storage = openStorageFromConfig(config, { poolSize: 2 });
  // With REDIS_URL on PostgreSQL, API processes cache keys under the epoch shared in Redis: the CLI's
  // changes to keys and users announce themselves to it, or are refused (src/modules/keys/keys-epoch.ts).
  const redis = config.REDIS_URL && !storage.dialect.keysEpoch ? openRedis(config.REDIS_URL) : undefined;
  try {
    if (redis) {
      await waitForRedis(redis);
      storage.dialect.keyChanges = keyChangeAnnouncer(redis, config.REDIS_KEY_PREFIX);
    }
    await migrateToLatest(storage.db, storage.dialect);
    const services = createServices({ storage, clock: opts.clock ?? systemClock, config });
    // A wrong or missing SECRETS_KEY stops the command too; secrets stored clear are sealed first.
    await services.secrets.prepare();
    return await fn(services, storage);
  } finally {
    await storage.close();
    redis?.disconnect();
  }
}

/**
 * A CLI command that writes: `fn` gets the door to changes as the system actor `cli` (checked like any actor), the
 * same door a request's principal has; the service it calls opens its change through it.
 */
export function cliWrite<T>(fn: (s: Services, u: Unit<SystemActor>) => Promise<T>): Promise<T> {
  return withServices((s) => fn(s, s.uow.as(systemActor('cli'))));
}
