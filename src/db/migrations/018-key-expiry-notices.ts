import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * `api_keys.expiry_notice_at` (docs/notifications.md#security-notifications): when the key's
 * "expiring in 7 days" notice was written (or, for a rolled key, when `key.rolled` said when it
 * stops). The `key-expiry-notices` job sets it with a conditional update (`where expiry_notice_at
 * is null`) in the transaction that writes the notice, so each key is told about once, also with
 * several workers. The index finds the keys that expire soon.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema.alterTable('api_keys').addColumn('expiry_notice_at', ts).execute();
  await db.schema.createIndex('api_keys_expires_at_idx').on('api_keys').column('expires_at').execute();
}
