import type { Kysely } from 'kysely';

/**
 * `receiver_versions` (docs/performance.md#the-receivers-of-an-event-cached): per workspace, a token replaced in the transaction of
 * every change to its webhooks (created, deleted, enabled, disabled, their events) and to its
 * integrations. Every event's insert returns it, so a process reuses the receivers it read under the
 * same token and reads them again once any process changed them. A token is random, never a count: a
 * change rolled back cannot leave its token to be reused by a later one. A workspace without a row
 * has had no change since this migration (its token reads as null).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('receiver_versions')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey())
    .addColumn('version', 'text', (c) => c.notNull())
    .execute();
}
