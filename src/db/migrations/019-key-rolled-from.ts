import type { Kysely } from 'kysely';

/**
 * `api_keys.rolled_from` (docs/api.md#keys-scopes-and-roles): the key a successor was rolled from
 * (`POST /keys/{id}/roll`), so the API and the console can link the two keys that share a name.
 * Null for keys made any other way, and for successors rolled before this migration.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('rolled_from', 'text').execute();
}
