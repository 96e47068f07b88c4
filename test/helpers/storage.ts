import { randomBytes } from 'node:crypto';
import { openStorage, type Storage } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';

/** Which backend the integration suite runs on: SQLite always; PostgreSQL when TEST_DATABASE_URL is set. */
export function testBackend(): 'sqlite' | 'postgres' {
  return process.env.TEST_DATABASE_URL ? 'postgres' : 'sqlite';
}

/**
 * A fresh, migrated database for one test file: a SQLite file in the OS temp dir (real WAL
 * and fsync, like production), or its own PostgreSQL schema so runs never collide.
 * `migrate: false` leaves it empty (migration tests apply the steps themselves).
 */
export async function openTestStorage(
  opts: { migrate?: boolean } = {},
): Promise<Storage & { url: string; schema?: string }> {
  const migrate = opts.migrate ?? true;
  const suffix = randomBytes(6).toString('hex');
  const pgUrl = process.env.TEST_DATABASE_URL;
  if (pgUrl) {
    const schema = `t_${suffix}`;
    const admin = openStorage({ url: pgUrl, poolSize: 1 });
    const { sql } = await import('kysely');
    await sql.raw(`create schema ${schema}`).execute(admin.db);
    await admin.close();
    const storage = openStorage({ url: pgUrl, poolSize: 5, schema });
    if (migrate) await migrateToLatest(storage.db, storage.dialect);
    return {
      ...storage,
      url: pgUrl,
      schema,
      async close() {
        await storage.close();
        const cleanup = openStorage({ url: pgUrl, poolSize: 1 });
        await sql.raw(`drop schema ${schema} cascade`).execute(cleanup.db);
        await cleanup.close();
      },
    };
  }
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { rm } = await import('node:fs/promises');
  const path = join(tmpdir(), `wsvc-test-${suffix}.db`);
  const url = `sqlite:${path}`;
  const storage = openStorage({ url });
  if (migrate) await migrateToLatest(storage.db, storage.dialect);
  return {
    ...storage,
    url,
    async close() {
      await storage.close();
      await Promise.all(['', '-wal', '-shm', '.key'].map((s) => rm(path + s, { force: true })));
    },
  };
}
