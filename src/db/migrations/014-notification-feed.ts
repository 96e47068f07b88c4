import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * The in-app feed and emailed links (docs/notifications.md), on the outbox of migration 012:
 * - `read_at`: when the recipient marked the notification read in the console's feed.
 * - `secret`: the single-use link of an invite or password-reset email, kept only until the email is
 *   sent (or given up); then null, so links live on only as digests (console_links) and in the
 *   recipient's mailbox.
 * - `channels`: where a notification goes, from its recipient's preferences when written
 *   (`email,in_app`, `email`, `in_app`); null: both.
 * - `notification_preferences`: per user and optional category, the channels chosen (`channels`
 *   as above, '' for none); no row: both.
 * - an index on `created_at` for the 90-day purge.
 * Independent of migration 013 (billing).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema.alterTable('notifications').addColumn('read_at', ts).execute();
  await db.schema.alterTable('notifications').addColumn('secret', 'text').execute();
  await db.schema.alterTable('notifications').addColumn('channels', 'text').execute();
  await db.schema
    .createTable('notification_preferences')
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('channels', 'text', (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('notification_preferences_pk', ['user_id', 'category'])
    .execute();
  await db.schema.createIndex('notifications_created_idx').on('notifications').column('created_at').execute();
}
