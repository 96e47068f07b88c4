import { type Kysely, sql } from 'kysely';
import { CREDENTIAL_ENDED_CODE, type Dialect } from '../dialect.js';

/**
 * Deleting a workspace (docs/data-lifecycle.md#deleting-a-workspace):
 * - `workspaces.deletion_scheduled_at`, `delete_at`, `deletion_scheduled_by`: set while a deletion is scheduled
 *   (its keys answer 401 workspace_deleted, its deliveries are held); cleared by a cancellation.
 * - `workspace_tombstones`: what stays of a deleted workspace besides its finalized invoices: its id, when its rows
 *   were deleted, and its audit chain's last entry (seq, hash).
 * - PostgreSQL: `wsvc_hold_key` (migration 026) also raises WK401 when the key's workspace is scheduled for deletion.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const ts = sql.raw(dialect.types.timestamp);
  await db.schema.alterTable('workspaces').addColumn('deletion_scheduled_at', ts).execute();
  await db.schema.alterTable('workspaces').addColumn('delete_at', ts).execute();
  await db.schema.alterTable('workspaces').addColumn('deletion_scheduled_by', 'text').execute();
  await db.schema
    .createTable('workspace_tombstones')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey())
    .addColumn('deleted_at', ts, (c) => c.notNull())
    .addColumn('audit_last_seq', 'integer')
    .addColumn('audit_last_hash', 'text')
    .execute();
  if (dialect.name !== 'postgres') return;
  await sql`
create or replace function wsvc_hold_key(p_key text, p_user text, p_now text) returns void
language plpgsql volatile as $$
begin
  perform pg_advisory_xact_lock_shared(hashtextextended(n, 0)) from unnest(array['key:' || p_key, 'user:' || p_user]) as n;
  if not exists (
    select 1 from api_keys k join users u on u.id = k.user_id join workspaces w on w.id = k.workspace_id
    where k.id = p_key and k.revoked_at is null and (k.expires_at is null or k.expires_at > p_now::timestamptz)
      and u.removed_at is null and w.deletion_scheduled_at is null
  ) then
    raise exception 'credential ended' using errcode = '${sql.raw(CREDENTIAL_ENDED_CODE)}';
  end if;
end $$`.execute(db);
}
