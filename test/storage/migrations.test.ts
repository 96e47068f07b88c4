import { type Kysely, type Migration, Migrator, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { Storage } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import * as core from '../../src/db/migrations/001-core.js';
import * as userRemoval from '../../src/db/migrations/002-user-removal.js';
import * as eventsDeliveries from '../../src/db/migrations/003-events-deliveries.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — migration 004 on each database's DDL and real rows
// Tier: quick

/** Applies 001–003 only, through Kysely's migrator as production does, so 004 runs on real data. */
async function migrateTo003(storage: Storage): Promise<void> {
  const steps = { '001-core': core, '002-user-removal': userRemoval, '003-events-deliveries': eventsDeliveries };
  const migrations: Record<string, Migration> = {};
  for (const [name, m] of Object.entries(steps)) migrations[name] = { up: (db) => m.up(db, storage.dialect) };
  const migrator = new Migrator({
    db: storage.db,
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: storage.dialect.currentSchema ? await storage.dialect.currentSchema(storage.db) : undefined,
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}

const T = '2026-11-22T10:00:00.000Z';
const user = (id: string, email: string, removed_at: string | null = null) => ({
  id,
  workspace_id: 'ws_1',
  email,
  name: null,
  role: 'member',
  timezone: null,
  created_at: T,
  updated_at: T,
  removed_at,
});

describe('migration 004-user-email-reuse (on the suite backend)', () => {
  let storage: Storage | undefined;
  afterEach(async () => {
    await storage?.close();
    storage = undefined;
  });

  it('keeps every user, key and test profile, and the cascades, while making emails reusable', async () => {
    const s = await openTestStorage({ migrate: false });
    storage = s;
    await migrateTo003(s);
    const db = s.db as unknown as Kysely<Record<string, Record<string, unknown>>>;
    await db.insertInto('workspaces').values({ id: 'ws_1', name: 'W', created_at: T, updated_at: T }).execute();
    await db
      .insertInto('users')
      .values([user('usr_1', 'a@example.test'), user('usr_2', 'b@example.test', T)])
      .execute();
    const key = (id: string, user_id: string) => ({
      id,
      workspace_id: 'ws_1',
      user_id,
      env: 'live',
      name: id,
      digest: `digest-${id}`,
      prefix: 'svc_live_',
      scopes: null,
      created_at: T,
      revoked_at: null,
      last_used_at: null,
    });
    await db
      .insertInto('api_keys')
      .values([key('key_1', 'usr_1'), key('key_2', 'usr_2')])
      .execute();
    await db
      .insertInto('user_test_profiles')
      .values({ user_id: 'usr_1', name: 'Sandbox', timezone: null, updated_at: T })
      .execute();
    const rows = async (table: string) => (await db.selectFrom(table).selectAll().execute()).length;
    const before = {
      users: await db.selectFrom('users').selectAll().orderBy('id').execute(),
      keys: await db.selectFrom('api_keys').selectAll().orderBy('id').execute(),
      profiles: await rows('user_test_profiles'),
    };

    expect(await migrateToLatest(s.db, s.dialect)).toContain('004-user-email-reuse');

    expect(await db.selectFrom('users').selectAll().orderBy('id').execute()).toEqual(before.users);
    // Later migrations (007) add key columns; every value that was there is unchanged.
    expect(await db.selectFrom('api_keys').selectAll().orderBy('id').execute()).toMatchObject(before.keys);
    expect(await rows('user_test_profiles')).toBe(before.profiles);
    if (s.dialect.name === 'sqlite') {
      const fk = await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db);
      expect(fk.rows[0]?.foreign_keys).toBe(1);
    }

    // The removed user's email can be taken again; a current member's cannot.
    await db.insertInto('users').values(user('usr_3', 'b@example.test')).execute();
    await expect(db.insertInto('users').values(user('usr_4', 'a@example.test')).execute()).rejects.toSatisfy((e) =>
      s.dialect.isUniqueViolation(e),
    );
    // Deleting a user still cascades to its keys and test profile (the FKs point at the new table).
    await db.deleteFrom('users').where('id', '=', 'usr_1').execute();
    expect((await db.selectFrom('api_keys').select('id').execute()).map((r) => r.id)).toEqual(['key_2']);
    expect(await rows('user_test_profiles')).toBe(0);
  });
});
