import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../dialect.js';

/**
 * Performance (docs/performance.md#totals-without-count): `meta.total` of GET /resources was a COUNT(*) per request, 64 ms on a 1,000,000-resource
 * workspace. The resources repository keeps these counts in the same transaction as each change:
 * one row per workspace, environment, status, type and slot (a random slot per change, so that
 * concurrent PostgreSQL writers of one workspace rarely update the same row). Total = SUM(n).
 */
export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable('resource_counts')
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('env', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('slot', 'integer', (c) => c.notNull())
    .addColumn('n', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('resource_counts_pk', ['workspace_id', 'env', 'status', 'type', 'slot'])
    .execute();
  await sql`insert into resource_counts (workspace_id, env, status, type, slot, n)
    select workspace_id, env, status, type, 0, count(*) from resources
    group by workspace_id, env, status, type`.execute(db);
}
