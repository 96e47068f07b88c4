import type { Storage } from '../db/database.js';
import type { AuditTrail } from '../kernel/audit-actions.js';
import { systemActor } from '../kernel/principal.js';
import type { WriteTx } from '../modules/auth/write-runner.js';
import type { Services } from '../services.js';

/**
 * Opens the configured database (migrated) and the services, runs `fn`, closes. The settings, storage
 * and services are loaded here, when a command runs, not when `wsvc` starts: `wsvc --help` and a usage
 * error never load them (src/cli/main.ts).
 */
export async function withServices<T>(fn: (s: Services, storage: Storage) => Promise<T>): Promise<T> {
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
    return await fn(createServices({ storage, clock: systemClock, config }), storage);
  } finally {
    await storage.close();
    redis?.disconnect();
  }
}

/**
 * A CLI command that writes: runs `fn` in one transaction of the write runner as the system actor
 * `cli` (checked like any principal), marked as changing keys or users (`changesKeys`).
 */
export function cliWrite<T>(fn: (s: Services, trx: WriteTx, audit: AuditTrail) => Promise<T>): Promise<T> {
  return withServices((s) =>
    s.writeAs(systemActor('cli'), (trx, audit) => fn(s, trx, audit), undefined, { changesKeys: true }),
  );
}
