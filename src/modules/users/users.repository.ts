import type { Db } from '../../db/dialect.js';
import { batchAfterId, pageById } from '../../db/keyset.js';
import type { UsersTable, UserTestProfilesTable } from '../../db/types.js';
import type { PageRequest } from '../../lib/paging.js';
import type { WriteTx } from '../../platform/unit-of-work.js';
import type { User } from './users.schemas.js';

/** Row (with the test-key profile overlay when given) → API object. */
export function toUser(row: UsersTable, overlay?: UserTestProfilesTable): User {
  return {
    id: row.id,
    email: row.email,
    name: overlay?.name ?? row.name,
    role: row.role,
    timezone: overlay?.timezone ?? row.timezone,
    workspace_id: row.workspace_id,
    created_at: row.created_at,
    updated_at: overlay && overlay.updated_at > row.updated_at ? overlay.updated_at : row.updated_at,
  };
}

/** SQL for users and their test-mode profile overlays. */
export const usersRepository = {
  /** A batch of the workspace's rows after `afterId`, oldest first (an export's keyset walk). */
  exportBatch: (db: Db, workspaceId: string, afterId: string | null, limit: number) =>
    batchAfterId(db, 'users', workspaceId, afterId, limit),
  insert(db: WriteTx, row: UsersTable) {
    return db.insertInto('users').values(row).execute();
  },

  /** Whether the workspace exists (members and keys belong to one). */
  async workspaceExists(db: Db, id: string): Promise<boolean> {
    return (await db.selectFrom('workspaces').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
  },

  /** Whether the user exists and was not removed (docs/api.md#keys-scopes-and-roles). */
  async isMember(db: Db, id: string): Promise<boolean> {
    const row = await db
      .selectFrom('users')
      .select('id')
      .where('id', '=', id)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
    return row !== undefined;
  },

  memberOf(db: Db, workspaceId: string, userId: string) {
    return db
      .selectFrom('users')
      .select(['id', 'email', 'role'])
      .where('id', '=', userId)
      .where('workspace_id', '=', workspaceId)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
  },

  find(db: Db, id: string) {
    return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  },

  update(db: WriteTx, id: string, set: Partial<Pick<UsersTable, 'name' | 'timezone' | 'updated_at'>>) {
    return db.updateTable('users').set(set).where('id', '=', id).execute();
  },

  findOverlay(db: Db, userId: string) {
    return db.selectFrom('user_test_profiles').selectAll().where('user_id', '=', userId).executeTakeFirst();
  },

  async overlaysFor(db: Db, userIds: string[]): Promise<Map<string, UserTestProfilesTable>> {
    if (userIds.length === 0) return new Map();
    const rows = await db.selectFrom('user_test_profiles').selectAll().where('user_id', 'in', userIds).execute();
    return new Map(rows.map((r) => [r.user_id, r]));
  },

  upsertOverlay(db: WriteTx, row: UserTestProfilesTable) {
    return db
      .insertInto('user_test_profiles')
      .values(row)
      .onConflict((oc) =>
        oc.column('user_id').doUpdateSet({ name: row.name, timezone: row.timezone, updated_at: row.updated_at }),
      )
      .execute();
  },

  /** Every current member of a workspace, oldest first (CLI). */
  listAll(db: Db, workspaceId: string) {
    return db
      .selectFrom('users')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('removed_at', 'is', null)
      .orderBy('id')
      .execute();
  },

  /** Current members (removed users are not listed). */
  list(db: Db, workspaceId: string, page: PageRequest) {
    return pageById(
      db,
      'users',
      (eb) => eb.and([eb('workspace_id', '=', workspaceId), eb('removed_at', 'is', null)]),
      page,
    );
  },

  /** Changes a current member's role or marks them removed; false when there is no such member. */
  async setMembership(
    db: WriteTx,
    id: string,
    set: Partial<Pick<UsersTable, 'role' | 'removed_at'>> & { updated_at: string },
  ): Promise<boolean> {
    const r = await db
      .updateTable('users')
      .set(set)
      .where('id', '=', id)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },
};
