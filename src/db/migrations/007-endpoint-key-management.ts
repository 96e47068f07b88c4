import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Endpoint and key management over HTTP.
 * - webhooks: the previous secret and when it stops signing (rotate-secret), why an endpoint is
 *   disabled (`manual` now; room for automatic disabling).
 * - deliveries: the environment-wide delivery log (`GET /deliveries`, with and without `status`).
 * - api_keys: `expires_at` (a rolled key's end), `created_by` (the user who created it; null for
 *   keys made by the CLI), and the list of a user's own keys.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema.alterTable('webhooks').addColumn('previous_secret', 'text').execute();
  await db.schema.alterTable('webhooks').addColumn('previous_secret_expires_at', ts).execute();
  await db.schema.alterTable('webhooks').addColumn('disabled_reason', 'text').execute();

  await db.schema.createIndex('deliveries_scope_idx').on('deliveries').columns(['workspace_id', 'env', 'id']).execute();
  await db.schema
    .createIndex('deliveries_scope_status_idx')
    .on('deliveries')
    .columns(['workspace_id', 'env', 'status', 'id'])
    .execute();

  await db.schema.alterTable('api_keys').addColumn('expires_at', ts).execute();
  await db.schema.alterTable('api_keys').addColumn('created_by', 'text').execute();
  await db.schema.createIndex('api_keys_user_idx').on('api_keys').columns(['user_id', 'id']).execute();
}
