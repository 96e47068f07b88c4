import type { Kysely } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * The console's delivery log and overview (docs/console.md#performance):
 * - one endpoint's log, with any mix of its filters (state, event type, creation time), is paged and
 *   counted (`meta.total`) from an index alone: (webhook_id, id, created_at, event_type) and
 *   (webhook_id, status, id, created_at, event_type) replace (webhook_id, id) and (webhook_id, status,
 *   id); (webhook_id, event_type, id, created_at) serves a rare event type without a scan;
 * - the overview's delivery summary counts a workspace's deliveries per hour and state with one
 *   index range count each: (workspace_id, env, status, created_at);
 * - each attempt keeps the request headers it was sent with (JSON text; null for attempts made
 *   before this migration), shown beside its response.
 */
export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createIndex('deliveries_webhook_log_idx')
    .on('deliveries')
    .columns(['webhook_id', 'id', 'created_at', 'event_type'])
    .execute();
  await db.schema.dropIndex('deliveries_webhook_idx').execute();
  await db.schema
    .createIndex('deliveries_webhook_status_log_idx')
    .on('deliveries')
    .columns(['webhook_id', 'status', 'id', 'created_at', 'event_type'])
    .execute();
  await db.schema.dropIndex('deliveries_webhook_status_idx').execute();
  await db.schema
    .createIndex('deliveries_webhook_event_idx')
    .on('deliveries')
    .columns(['webhook_id', 'event_type', 'id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('deliveries_scope_status_created_idx')
    .on('deliveries')
    .columns(['workspace_id', 'env', 'status', 'created_at'])
    .execute();
  await db.schema.alterTable('delivery_attempts').addColumn('request_headers', 'text').execute();
}
