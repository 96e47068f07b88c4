import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * The console (docs/console.md): people sign in to the console. One password per email (a person may be a member of
 * several workspaces, one user row each), sessions stored as digests of their cookie token,
 * single-use links (set password, invite, reset) stored as digests, and the failed sign-ins that
 * the throttle counts (shared by every API process).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .createTable('console_credentials')
    .addColumn('email', 'text', (c) => c.primaryKey())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('console_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_digest', 'text', (c) => c.notNull().unique())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('last_seen_at', ts, (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('ended_at', ts)
    .addColumn('user_agent', 'text')
    .addColumn('ip', 'text')
    .execute();
  await db.schema.createIndex('console_sessions_email_idx').on('console_sessions').columns(['email', 'id']).execute();

  await db.schema
    .createTable('console_links')
    .addColumn('digest', 'text', (c) => c.primaryKey())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text')
    .addColumn('user_id', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('used_at', ts)
    .execute();
  await db.schema
    .createIndex('console_links_workspace_idx')
    .on('console_links')
    .columns(['workspace_id', 'purpose'])
    .execute();

  await db.schema
    .createTable('console_sign_in_failures')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('console_sign_in_failures_idx')
    .on('console_sign_in_failures')
    .columns(['subject', 'at'])
    .execute();

  // Sign-in finds a person's memberships by email, whatever its case.
  await db.schema.createIndex('users_email_lower_idx').on('users').expression(sql`lower(email)`).execute();
}
