import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * The transactional outbox (docs/api.md#events) and the delivery log (docs/api.md#webhooks, #webhook-deliveries).
 * `events.payload` is the exact JSON body sent to receivers, stored as text (not jsonb) so every
 * attempt of a delivery sends, and signs, the same bytes.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('resource_id', 'text')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  // GET /events filters (keyset paging on id after an equality prefix), the purge of a deleted resource's events, 30-day purge.
  await db.schema.createIndex('events_scope_idx').on('events').columns(['workspace_id', 'env', 'id']).execute();
  await db.schema.createIndex('events_type_idx').on('events').columns(['workspace_id', 'env', 'type', 'id']).execute();
  await db.schema
    .createIndex('events_resource_idx')
    .on('events')
    .columns(['workspace_id', 'env', 'resource_id', 'id'])
    .execute();
  await db.schema.createIndex('events_created_idx').on('events').column('created_at').execute();

  await db.schema
    .createTable('deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempt_count', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', ts)
    .addColumn('lease_until', ts)
    .addColumn('leased_by', 'text')
    .addColumn('last_response_status', 'integer')
    .addColumn('last_error', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  // The claim query: pending deliveries due now, oldest due first.
  await db.schema
    .createIndex('deliveries_due_idx')
    .on('deliveries')
    .columns(['status', 'next_attempt_at', 'id'])
    .execute();
  // The delivery log of one webhook (keyset paging), with its status filter.
  await db.schema.createIndex('deliveries_webhook_idx').on('deliveries').columns(['webhook_id', 'id']).execute();
  await db.schema
    .createIndex('deliveries_webhook_status_idx')
    .on('deliveries')
    .columns(['webhook_id', 'status', 'id'])
    .execute();
  await db.schema.createIndex('deliveries_event_idx').on('deliveries').column('event_id').execute();
  await db.schema.createIndex('deliveries_created_idx').on('deliveries').column('created_at').execute();

  await db.schema
    .createTable('delivery_attempts')
    .addColumn('delivery_id', 'text', (c) => c.notNull())
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('attempted_at', ts, (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('delivery_attempts_pk', ['delivery_id', 'number'])
    .execute();
}
