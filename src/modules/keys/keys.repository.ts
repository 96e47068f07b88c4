import type { ExpressionBuilder } from 'kysely';
import type { Db } from '../../db/dialect.js';
import { batchAfterId, pageById } from '../../db/keyset.js';
import { type Param, prepared } from '../../db/prepared.js';
import type { ApiKeysTable, Database, Env, Role } from '../../db/types.js';
import type { PageRequest } from '../../lib/paging.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

export interface KeyWithOwner {
  id: string;
  digest: string;
  env: Env;
  workspace_id: string;
  user_id: string;
  name: string;
  scopes: string | null;
  revoked_at: string | null;
  /** Set while the key's workspace is scheduled for deletion: the key answers 401 workspace_deleted. */
  deletion_scheduled_at: string | null;
  expires_at: string | null;
  role: Role | null;
  /** The workspace's subscription's payment state (payments with Stripe: `unpaid` answers 402); null without one. */
  payment_state: 'active' | 'unpaid' | null;
}

// Performance (docs/performance.md#queries-built-once): verification runs on every request, so its queries are built and compiled once.
const findByDigestQuery = prepared((db, $: Param<{ digest: string }>) =>
  db
    .selectFrom('api_keys')
    .leftJoin('users', (j) => j.onRef('users.id', '=', 'api_keys.user_id').on('users.removed_at', 'is', null))
    .innerJoin('workspaces', 'workspaces.id', 'api_keys.workspace_id')
    .leftJoin('subscriptions', 'subscriptions.workspace_id', 'api_keys.workspace_id')
    .select([
      'api_keys.id',
      'api_keys.digest',
      'api_keys.env',
      'api_keys.workspace_id',
      'api_keys.user_id',
      'api_keys.name',
      'api_keys.scopes',
      'api_keys.revoked_at',
      'api_keys.expires_at',
      'users.role',
      'workspaces.deletion_scheduled_at',
      'subscriptions.payment_state',
    ])
    .where('api_keys.digest', '=', $('digest')),
);

// No row lock: the caller holds the key's revocation lock shared instead (see Dialect.holdShared), so
// a revocation never waits behind a stream of writes with the key (it waited for FOR SHARE before).
const isActiveQuery = prepared((db, $: Param<{ id: string; now: string }>) =>
  db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .innerJoin('workspaces', 'workspaces.id', 'api_keys.workspace_id')
    .select('api_keys.id')
    .where('api_keys.id', '=', $('id'))
    .where('workspaces.deletion_scheduled_at', 'is', null)
    .where('api_keys.revoked_at', 'is', null)
    .where((eb) => eb.or([eb('api_keys.expires_at', 'is', null), eb('api_keys.expires_at', '>', $('now'))]))
    .where('users.removed_at', 'is', null),
);

/** Which keys a caller may see: a workspace, optionally one user's, in some environments (docs/api.md#keys-scopes-and-roles). */
export interface KeyVisibility {
  workspaceId: string;
  userId: string | null;
  envs: Env[];
}

function visibleTo(eb: ExpressionBuilder<Database, 'api_keys'>, v: KeyVisibility) {
  const conds = [eb('workspace_id', '=', v.workspaceId), eb('env', 'in', v.envs)];
  if (v.userId !== null) conds.push(eb('user_id', '=', v.userId));
  return eb.and(conds);
}

/** SQL for API keys. */
export const keysRepository = {
  /** A batch of the workspace's rows after `afterId`, oldest first (an export's keyset walk). */
  exportBatch: (db: Db, workspaceId: string, afterId: string | null, limit: number) =>
    batchAfterId(db, 'api_keys', workspaceId, afterId, limit),
  insert(db: WriteTx, row: ApiKeysTable) {
    return db.insertInto('api_keys').values(row).execute();
  },

  /** The key with this digest and its owner's current role (null role: the user was removed, docs/api.md#keys-scopes-and-roles). */
  async findByDigest(db: Db, digest: string): Promise<KeyWithOwner | undefined> {
    return (await findByDigestQuery.execute(db, { digest })).rows[0] as KeyWithOwner | undefined;
  },

  /** Every key of a workspace with its owner's email, never a secret (CLI `keys list`). */
  listByWorkspace(db: Db, workspaceId: string) {
    return db
      .selectFrom('api_keys as k')
      .innerJoin('users as u', 'u.id', 'k.user_id')
      .select([
        'k.id',
        'k.name',
        'k.env',
        'k.prefix',
        'k.scopes',
        'k.user_id',
        'u.email as owner_email',
        'k.workspace_id',
        'k.created_by',
        'k.created_at',
        'k.expires_at',
        'k.revoked_at',
        'k.last_used_at',
      ])
      .where('k.workspace_id', '=', workspaceId)
      .orderBy('k.id')
      .execute();
  },

  /** One key of the workspace that `v` may see (its own user's when `userId` is set, in `envs`). */
  findVisible(db: Db, v: KeyVisibility, id: string): Promise<ApiKeysTable | undefined> {
    return db
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', id)
      .where((eb) => visibleTo(eb, v))
      .executeTakeFirst();
  },

  /** A page of the keys `v` may see, oldest first. */
  listVisible(db: Db, v: KeyVisibility, page: PageRequest) {
    return pageById(db, 'api_keys', (eb) => visibleTo(eb, v), page);
  },

  /**
   * Sets when a rolled key stops working; `key.rolled` says when, so it also counts as the key's
   * expiry notice (`noticeAt`: no separate "expiring in 7 days").
   */
  async setExpiry(db: WriteTx, id: string, at: string, noticeAt: string): Promise<void> {
    await db.updateTable('api_keys').set({ expires_at: at, expiry_notice_at: noticeAt }).where('id', '=', id).execute();
  },

  /** Unrevoked keys expiring in (`now`, `until`] whose expiry notice is not written yet, soonest first. */
  expiringUnnoticed(db: Db, now: string, until: string, limit: number): Promise<ApiKeysTable[]> {
    return db
      .selectFrom('api_keys')
      .selectAll()
      .where('expires_at', '>', now)
      .where('expires_at', '<=', until)
      .where('revoked_at', 'is', null)
      .where('expiry_notice_at', 'is', null)
      .orderBy('expires_at')
      .orderBy('id')
      .limit(limit)
      .execute();
  },

  /** Records the key's expiry notice at `at` unless one was (another worker's); returns whether this call did. */
  async markExpiryNoticed(db: WriteTx, id: string, at: string): Promise<boolean> {
    const r = await db
      .updateTable('api_keys')
      .set({ expiry_notice_at: at })
      .where('id', '=', id)
      .where('expiry_notice_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  findById(db: Db, id: string) {
    return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
  },

  /** Marks the key revoked at `at`; false when it does not exist or was revoked before. */
  async revoke(db: WriteTx, id: string, at: string): Promise<boolean> {
    const r = await db
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  /** Whether the key is still usable at `now` (not revoked, not expired, owner a member), read inside the caller's write transaction (docs/api.md#keys-scopes-and-roles). */
  /** The ids of a workspace's keys, in id order (the order their locks are taken in). */
  async idsOfWorkspace(db: Db, workspaceId: string): Promise<string[]> {
    const rows = await db
      .selectFrom('api_keys')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where('revoked_at', 'is', null)
      .orderBy('id')
      .execute();
    return rows.map((r) => r.id);
  },

  async isActive(db: Db, id: string, now: string): Promise<boolean> {
    return (await isActiveQuery.execute(db, { id, now })).rows.length > 0;
  },

  /** Moves each key's `last_used_at` forward to `at` (never back), in key order (the usage flush). */
  async touchLastUsed(db: WriteTx, uses: ReadonlyArray<readonly [keyId: string, at: string]>): Promise<void> {
    for (const [keyId, at] of [...uses].sort(([a], [b]) => (a < b ? -1 : 1))) {
      await db
        .updateTable('api_keys')
        .set({ last_used_at: at })
        .where('id', '=', keyId)
        .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
        .execute();
    }
  },
};
