// Backends: postgres — the PostgreSQL catalog and schemas dropped by other sessions
// Tier: full — migrates a fresh schema several times while another session creates and drops schemas
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openStorage } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';

// Each test file (and each deployment sharing a database) has its own schema. A migration reads the
// catalog to find its own tables; another session dropping its schema at that moment must not fail
// it (it did: Kysely's introspector resolved every schema of the database by name while scanning,
// and failed with `schema "…" does not exist`; CI saw it as test files failing in beforeAll).
const url = process.env.TEST_DATABASE_URL as string;
const admin = openStorage({ url, poolSize: 2 });
afterAll(() => admin.close());

describe.skipIf(!url)('migrations beside schemas dropped by others', () => {
  it('every migration of a fresh schema succeeds while other schemas come and go', { timeout: 120_000 }, async () => {
    let stop = false;
    let churned = 0;
    const churn = (async () => {
      while (!stop) {
        const s = `t_churn_${randomBytes(6).toString('hex')}`;
        const columns = Array.from({ length: 20 }, (_, i) => `c${i} serial`).join(', ');
        await sql.raw(`create schema ${s}`).execute(admin.db);
        for (let i = 0; i < 10; i++) await sql.raw(`create table ${s}.x${i} (${columns})`).execute(admin.db);
        await sql.raw(`drop schema ${s} cascade`).execute(admin.db);
        churned++;
      }
    })();
    const failures: string[] = [];
    try {
      for (let round = 0; round < 6; round++) {
        const schema = `t_${randomBytes(6).toString('hex')}`;
        await sql.raw(`create schema ${schema}`).execute(admin.db);
        const storage = openStorage({ url, poolSize: 1, schema });
        try {
          await migrateToLatest(storage.db, storage.dialect);
        } catch (e) {
          failures.push((e as Error).message);
        } finally {
          await storage.close();
          await sql.raw(`drop schema ${schema} cascade`).execute(admin.db);
        }
      }
    } finally {
      stop = true;
      await churn;
    }
    expect(churned).toBeGreaterThan(0);
    expect(failures).toEqual([]);
  });
});
