import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * docs/api.md#keys-scopes-and-roles: a removed user's keys answer 401 expired_token. Deleting the row would cascade to its
 * keys (001), and an unknown key is invalid_token, so removal marks the user instead.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable('users').addColumn('removed_at', sql.raw(dialect.types.timestamp)).execute();
}
