import type { Kysely } from 'kysely';

/**
 * Drops `audit_entries_workspace_seq_desc_idx`: the unique (workspace_id, seq) constraint's index already
 * serves the newest-first list and its cursor (both databases scan an index backwards), and every
 * change paid for keeping the copy (docs/performance.md#the-audit-numbering).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('audit_entries_workspace_seq_desc_idx').execute();
}
