import { loadConfig } from '../config.js';
import { openStorageFromConfig, type Storage } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { systemClock } from '../lib/clock.js';
import { createServices, type Services } from '../services.js';

/** Opens the configured database (migrated) and the services, runs `fn`, closes. */
export async function withServices<T>(fn: (s: Services, storage: Storage) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const storage = openStorageFromConfig(config, { poolSize: 2 });
  try {
    await migrateToLatest(storage.db, storage.dialect);
    return await fn(createServices({ storage, clock: systemClock, config }), storage);
  } finally {
    await storage.close();
  }
}
