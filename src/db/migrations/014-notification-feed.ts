import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * The in-app feed and emailed links (docs/notifications.md), on the outbox of migration 012:
 * - `read_at`: when the recipient marked the notification read in the console's feed.
 * - `secret`: the single-use link of an invite or password-reset email, kept only until the email is
 *   sent (or given up); then null, so links live on only as digests (console_links) and in the
 *   recipient's mailbox.
 * - an index on `created_at` for the 90-day purge.
 * Independent of migration 013 (another area).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema.alterTable('notifications').addColumn('read_at', ts).execute();
  await db.schema.alterTable('notifications').addColumn('secret', 'text').execute();
  await db.schema.createIndex('notifications_created_idx').on('notifications').column('created_at').execute();
}
