import { type Kysely, sql } from 'kysely';
import { CREDENTIAL_ENDED_CODE, type Dialect } from '../dialect.js';

/**
 * PostgreSQL only: `wsvc_hold_key(key_id, user_id, now)`, an API key's re-check at the end of a write
 * (docs/api.md#keys-scopes-and-roles) as one statement that can be sent with the write's other statements
 * in one round trip (docs/performance.md, "A write in one round trip on PostgreSQL"). It takes the key's and
 * its user's revocation locks shared, then reads the key: a VOLATILE function's statements each take a
 * snapshot of their own, so the read sees every revocation that committed before the locks were granted
 * (one SQL statement, a CTE, would read in the snapshot taken before it waited). It raises SQLSTATE
 * WK401 when the key is revoked or expired or its user removed.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect.name !== 'postgres') return;
  await sql`
create or replace function wsvc_hold_key(p_key text, p_user text, p_now text) returns void
language plpgsql volatile as $$
begin
  perform pg_advisory_xact_lock_shared(hashtextextended(n, 0)) from unnest(array['key:' || p_key, 'user:' || p_user]) as n;
  if not exists (
    select 1 from api_keys k join users u on u.id = k.user_id
    where k.id = p_key and k.revoked_at is null and (k.expires_at is null or k.expires_at > p_now::timestamptz)
      and u.removed_at is null
  ) then
    raise exception 'credential ended' using errcode = '${sql.raw(CREDENTIAL_ENDED_CODE)}';
  end if;
end $$`.execute(db);
}
