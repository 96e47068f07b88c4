import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * An email is unique among a workspace's *current* members, so a removed user's email can be
 * added again. The removed row stays (docs/api.md#keys-scopes-and-roles: their keys keep answering 401 expired_token), which
 * is why 001's unique constraint on (workspace_id, email) becomes a partial unique index.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect.name === 'sqlite') return rebuildSqliteUsers(db, dialect);
  // PostgreSQL: the migrator runs this in a transaction; dropping the constraint drops its index.
  await db.schema.alterTable('users').dropConstraint('users_workspace_email_key').execute();
  await currentEmailIndex(db, 'users');
}

function currentEmailIndex(db: Kysely<unknown>, table: string) {
  return db.schema
    .createIndex('users_current_email_key')
    .on(table)
    .columns(['workspace_id', 'email'])
    .unique()
    .where(sql.ref('removed_at'), 'is', null)
    .execute();
}

/**
 * SQLite cannot drop a table constraint, so the table is rebuilt the way SQLite documents
 * (https://sqlite.org/lang_altertable.html#otheralter). Foreign keys must be off for it: with
 * them on, DROP TABLE users would cascade-delete every API key and test profile. The pragma is
 * ignored inside a transaction; Kysely runs SQLite migrations outside one (no transactional
 * DDL), on the single connection, so the pragma is set here and the rebuild gets its own
 * transaction: it commits whole, after the foreign key check, or not at all.
 */
async function rebuildSqliteUsers(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  const fkWasOn = (await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db)).rows[0]?.foreign_keys === 1;
  await sql`pragma foreign_keys = off`.execute(db);
  try {
    const fkNow = (await sql<{ foreign_keys: number }>`pragma foreign_keys`.execute(db)).rows[0]?.foreign_keys;
    if (fkNow !== 0) throw new Error('004-user-email-reuse: foreign keys could not be turned off (open transaction?)');
    await sql`begin immediate`.execute(db);
    try {
      await db.schema
        .createTable('users_new')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('name', 'text')
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('timezone', 'text')
        .addColumn('created_at', ts, (c) => c.notNull())
        .addColumn('updated_at', ts, (c) => c.notNull())
        .addColumn('removed_at', ts)
        .execute();
      const columns = sql.raw('id, workspace_id, email, name, role, timezone, created_at, updated_at, removed_at');
      await sql`insert into users_new (${columns}) select ${columns} from users`.execute(db);
      await db.schema.dropTable('users').execute();
      // api_keys and user_test_profiles name "users" in their REFERENCES; after the rename they
      // point at the new table, with their ON DELETE CASCADE unchanged.
      await db.schema.alterTable('users_new').renameTo('users').execute();
      await db.schema.createIndex('users_workspace_id_idx').on('users').columns(['workspace_id', 'id']).execute();
      await currentEmailIndex(db, 'users');
      const broken = await sql`pragma foreign_key_check`.execute(db);
      if (broken.rows.length > 0) throw new Error('004-user-email-reuse: foreign key check failed after the rebuild');
      await sql`commit`.execute(db);
    } catch (err) {
      await sql`rollback`.execute(db).catch(() => {});
      throw err;
    }
  } finally {
    if (fkWasOn) await sql`pragma foreign_keys = on`.execute(db);
  }
}
