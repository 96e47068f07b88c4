import type { Db } from '../../db/dialect.js';
import { sealedUnderOther, toSeal } from '../../db/sealed-values.js';
import type { SsoSignInsTable, WorkspaceSsoTable } from '../../db/types.js';
import type { SealedAt } from '../../lib/sealed.js';
import type { SealedColumn, StoredSecret } from '../../platform/sealed-columns.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

/** SQL for each workspace's single sign-on and the sign-ins in flight. */
export const ssoRepository = {
  find(db: Db, workspaceId: string) {
    return db.selectFrom('workspace_sso').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
  },

  upsert(db: WriteTx, row: WorkspaceSsoTable) {
    const { workspace_id: _w, created_at: _c, ...changes } = row;
    return db
      .insertInto('workspace_sso')
      .values(row)
      .onConflict((oc) => oc.column('workspace_id').doUpdateSet(changes))
      .execute();
  },

  remove(db: WriteTx, workspaceId: string) {
    return db.deleteFrom('workspace_sso').where('workspace_id', '=', workspaceId).executeTakeFirst();
  },

  /** Workspaces whose allowed domains include `domain` (stored as a JSON array of quoted names). */
  forDomain(db: Db, domain: string) {
    return db
      .selectFrom('workspace_sso')
      .innerJoin('workspaces', 'workspaces.id', 'workspace_sso.workspace_id')
      .select(['workspace_sso.workspace_id', 'workspaces.name as workspace_name', 'workspace_sso.allowed_domains'])
      .where('workspace_sso.allowed_domains', 'like', `%${JSON.stringify(domain)}%`)
      .orderBy('workspace_sso.workspace_id')
      .limit(20)
      .execute();
  },

  /** Of these workspaces, those that require single sign-on, with their break-glass admin. */
  requiring(db: Db, workspaceIds: string[]) {
    if (workspaceIds.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('workspace_sso')
      .select(['workspace_id', 'break_glass_user_id'])
      .where('workspace_id', 'in', workspaceIds)
      .where('required', '=', 1)
      .execute();
  },

  insertSignIn(db: WriteTx, row: SsoSignInsTable) {
    return db.insertInto('sso_sign_ins').values(row).execute();
  },

  /** Uses a sign-in in flight once: its row when it was unused, else undefined. */
  async takeSignIn(db: WriteTx, stateDigest: string, at: string) {
    const row = await db
      .selectFrom('sso_sign_ins')
      .selectAll()
      .where('state_digest', '=', stateDigest)
      .executeTakeFirst();
    if (!row || row.used_at !== null) return undefined;
    const r = await db
      .updateTable('sso_sign_ins')
      .set({ used_at: at })
      .where('state_digest', '=', stateDigest)
      .where('used_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1 ? row : undefined;
  },

  /** Deletes up to `limit` sign-ins that expired before `before`; returns how many. */
  async purge(db: WriteTx, before: string, limit: number): Promise<number> {
    const rows = await db
      .selectFrom('sso_sign_ins')
      .select('state_digest')
      .where('expires_at', '<', before)
      .limit(limit)
      .execute();
    if (rows.length === 0) return 0;
    const keys = rows.map((r) => r.state_digest);
    await db.deleteFrom('sso_sign_ins').where('state_digest', 'in', keys).execute();
    return rows.length;
  },
};

/** Where a workspace's client secret is sealed (src/lib/sealed.ts). */
export function clientSecretAt(workspaceId: string): SealedAt {
  return { column: 'workspace_sso.client_secret', scope: workspaceId, row: workspaceId };
}

/** The client secrets as a sealed column (src/platform/sealed-columns.ts). */
export const clientSecretSealedColumn: SealedColumn = {
  column: 'workspace_sso.client_secret',
  async toSeal(db: Db, kid: string | null, limit: number): Promise<StoredSecret[]> {
    const rows = await db
      .selectFrom('workspace_sso')
      .select(['workspace_id', 'client_secret'])
      .where(toSeal('client_secret', kid))
      .orderBy('workspace_id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ at: clientSecretAt(r.workspace_id), stored: r.client_secret }));
  },
  async replace(db: WriteTx, s: StoredSecret, next: string): Promise<boolean> {
    const r = await db
      .updateTable('workspace_sso')
      .set({ client_secret: next })
      .where('workspace_id', '=', s.at.row)
      .where('client_secret', '=', s.stored)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },
  async sealedUnderOther(db: Db, kids: readonly string[]): Promise<string | undefined> {
    const r = await db
      .selectFrom('workspace_sso')
      .select('client_secret')
      .where(sealedUnderOther('client_secret', kids))
      .limit(1)
      .executeTakeFirst();
    return r?.client_secret;
  },
};
