import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Integrations (docs/integrations.md):
 * - `integrations`: a Slack or Discord incoming webhook of a workspace, the resource events of one
 *   environment (`env`, `events`: JSON list) and the notification categories (`categories`: JSON
 *   list) it forwards. `url` is a secret: the API shows only its host and last 4 characters.
 * - `integration_messages`: the integration's own log and outbox: one row per message, written in
 *   the transaction of its cause, sent by the `send-integrations` job (leased, retried with
 *   back-off, a 429's Retry-After honoured).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema
    .createTable('integrations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('categories', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('integrations_workspace_idx')
    .on('integrations')
    .columns(['workspace_id', 'id'])
    .execute();
  await db.schema
    .createTable('integration_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('integration_id', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', ts)
    .addColumn('lease_until', ts)
    .addColumn('leased_by', 'text')
    .addColumn('last_response_status', 'integer')
    .addColumn('last_response_excerpt', 'text')
    .addColumn('last_error', 'text')
    .addColumn('sent_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('integration_messages_due_idx')
    .on('integration_messages')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('integration_messages_log_idx')
    .on('integration_messages')
    .columns(['integration_id', 'id'])
    .execute();
}
