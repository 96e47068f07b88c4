import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Endpoint health (docs/api.md#endpoint-health):
 * - webhooks: `failing_since` (the first failed attempt since the last success, or since the
 *   endpoint was last enabled), `failed_attempts` (failed attempts since then), `failing_notified_at`
 *   (the last "failing" notification: at most one per 24 h) and `unhealthy_notified_at` (a
 *   "failing" or "disabled" notification was written and no "recovered" since).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema.alterTable('webhooks').addColumn('failing_since', ts).execute();
  await db.schema
    .alterTable('webhooks')
    .addColumn('failed_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('webhooks').addColumn('failing_notified_at', ts).execute();
  await db.schema.alterTable('webhooks').addColumn('unhealthy_notified_at', ts).execute();
}
