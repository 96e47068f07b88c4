import { type Kysely, sql } from 'kysely';
import { type Dialect, RECEIVERS_MOVED_CODE } from '../dialect.js';

/**
 * PostgreSQL only: `wsvc_expect_receivers(workspace_id, version)`, sent with a write whose event's insert was
 * deferred because this process held the workspace's receivers under `version` (docs/performance.md, "A write in
 * one round trip on PostgreSQL"). It raises SQLSTATE WK409 when the workspace's receivers' token
 * (`receiver_versions`) is not `version` (null: no row): a change to its webhooks or integrations committed since
 * the process read them, so the write fails and is run again with the receivers read afresh.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect.name !== 'postgres') return;
  await sql`
create or replace function wsvc_expect_receivers(p_workspace text, p_version text) returns void
language plpgsql volatile as $$
begin
  if (select version from receiver_versions where workspace_id = p_workspace) is distinct from p_version then
    raise exception 'receivers changed' using errcode = '${sql.raw(RECEIVERS_MOVED_CODE)}';
  end if;
end $$`.execute(db);
}
