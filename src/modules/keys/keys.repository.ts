import type { Db } from '../../db/dialect.js';
import { type Param, prepared } from '../../db/prepared.js';
import type { ApiKeysTable, Env, Role } from '../../db/types.js';

export interface KeyWithOwner {
  id: string;
  digest: string;
  env: Env;
  workspace_id: string;
  user_id: string;
  scopes: string | null;
  revoked_at: string | null;
  role: Role | null;
}

// Performance (docs/performance.md, change 2): verification runs on every request, so its queries are built and compiled once.
const findByDigestQuery = prepared((db, $: Param<{ digest: string }>) =>
  db
    .selectFrom('api_keys')
    .leftJoin('users', (j) => j.onRef('users.id', '=', 'api_keys.user_id').on('users.removed_at', 'is', null))
    .select([
      'api_keys.id',
      'api_keys.digest',
      'api_keys.env',
      'api_keys.workspace_id',
      'api_keys.user_id',
      'api_keys.scopes',
      'api_keys.revoked_at',
      'users.role',
    ])
    .where('api_keys.digest', '=', $('digest')),
);

// No row lock: the caller holds the key's revocation lock shared instead (see Dialect.holdShared), so
// a revocation never waits behind a stream of writes with the key (it waited for FOR SHARE before).
const isActiveQuery = prepared((db, $: Param<{ id: string }>) =>
  db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .select('api_keys.id')
    .where('api_keys.id', '=', $('id'))
    .where('api_keys.revoked_at', 'is', null)
    .where('users.removed_at', 'is', null),
);

/** SQL for API keys. */
export const keysRepository = {
  insert(db: Db, row: ApiKeysTable) {
    return db.insertInto('api_keys').values(row).execute();
  },

  /** The key with this digest and its owner's current role (null role: the user was removed, docs/api.md#keys-scopes-and-roles). */
  async findByDigest(db: Db, digest: string): Promise<KeyWithOwner | undefined> {
    return (await findByDigestQuery.execute(db, { digest })).rows[0] as KeyWithOwner | undefined;
  },

  listByWorkspace(db: Db, workspaceId: string) {
    return db
      .selectFrom('api_keys')
      .select([
        'id',
        'name',
        'env',
        'prefix',
        'scopes',
        'user_id',
        'workspace_id',
        'created_at',
        'revoked_at',
        'last_used_at',
      ])
      .where('workspace_id', '=', workspaceId)
      .orderBy('id')
      .execute();
  },

  findById(db: Db, id: string) {
    return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
  },

  /** Marks the key revoked at `at`; false when it does not exist or was revoked before. */
  async revoke(db: Db, id: string, at: string): Promise<boolean> {
    const r = await db
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  /** Whether the key is still usable now, read inside the caller's write transaction (docs/api.md#keys-scopes-and-roles). */
  async isActive(db: Db, id: string): Promise<boolean> {
    return (await isActiveQuery.execute(db, { id })).rows.length > 0;
  },
};
