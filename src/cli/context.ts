import { loadConfig } from '../config.js';
import { openStorage, type Storage } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { systemClock } from '../lib/clock.js';
import { createServices, type Services } from '../services.js';

/** Opens the configured database (migrated) and the services, runs `fn`, closes. */
export async function withServices<T>(fn: (s: Services, storage: Storage) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const storage = openStorage({
    url: config.DATABASE_URL,
    poolSize: 2,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
  });
  try {
    await migrateToLatest(storage.db, storage.dialect);
    return await fn(createServices({ storage, clock: systemClock, config }), storage);
  } finally {
    await storage.close();
  }
}
