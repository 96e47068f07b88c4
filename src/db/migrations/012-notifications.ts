import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * The notification outbox (docs/api.md#notifications):
 * - `notifications`: one row per notification and recipient, written in the transaction of what
 *   causes it, sent by the worker (claimed with a lease, retried with back-off).
 * - `mailbox`: the emails kept instead of sent when SMTP_URL is not set (`wsvc mail list|show`).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .createTable('notifications')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', ts)
    .addColumn('lease_until', ts)
    .addColumn('leased_by', 'text')
    .addColumn('last_error', 'text')
    .addColumn('sent_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('notifications_due_idx')
    .on('notifications')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('notifications_user_idx')
    .on('notifications')
    .columns(['workspace_id', 'user_id', 'id'])
    .execute();

  await db.schema
    .createTable('mailbox')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('notification_id', 'text', (c) => c.notNull())
    .addColumn('to_address', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('html', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
}
