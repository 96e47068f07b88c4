import type { Db } from '../../db/dialect.js';
import type { ApiKeysTable, Env } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { ForbiddenError, fieldError, NotFoundError } from '../../kernel/errors.js';
import { isId } from '../../kernel/ids.js';
import type { Principal } from '../../kernel/principal.js';
import { SCOPES } from '../../kernel/scopes.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import type { Change, Unit } from '../../platform/unit-of-work.js';
import { assertRollable, type KeyRegistry } from './key-registry.service.js';
import { keysRepository as repo } from './keys.repository.js';
import type { ApiKey, CreatedApiKey, CreateKeyInput, RolledApiKey } from './keys.schemas.js';

/** Row → API object: never the digest; `prefix` is the 4 characters after `svc_<env>_`. */
export function toApiKey(row: ApiKeysTable, now: string): ApiKey {
  const expiresAt = row.expires_at ?? null;
  return {
    id: row.id,
    name: row.name,
    env: row.env,
    prefix: row.prefix.slice(row.prefix.lastIndexOf('_') + 1),
    scopes: row.scopes === null ? [...SCOPES] : (JSON.parse(row.scopes) as string[]),
    status: row.revoked_at !== null ? 'revoked' : expiresAt !== null && expiresAt <= now ? 'expired' : 'active',
    user_id: row.user_id,
    workspace_id: row.workspace_id,
    created_by: row.created_by ?? null,
    rolled_from: row.rolled_from ?? null,
    created_at: row.created_at,
    expires_at: expiresAt,
    revoked_at: row.revoked_at,
    last_used_at: row.last_used_at,
  };
}

/**
 * What /v1/keys serves (keys.routes.ts): API keys managed by their users (docs/api.md#keys-scopes-and-roles): an admin sees and manages every key of the workspace,
 * anyone else their own. A test key sees and manages test keys only, so a leaked sandbox key
 * cannot mint live access. Changes to keys declare `changesKeys`, so cached verified keys are re-verified after
 * their commit; keys are made and revoked by the registry (key-registry.service.ts), in the same change.
 */
export function createKeysService(deps: {
  db: Db;
  clock: Clock;
  registry: Pick<KeyRegistry, 'create' | 'revoke' | 'roll'>;
}) {
  const { db, clock } = deps;

  const visibility = (p: Principal) => ({
    workspaceId: p.workspaceId,
    userId: p.role === 'admin' ? null : p.userId,
    envs: (p.kind === 'api_key' && p.env === 'test' ? ['test'] : ['live', 'test']) as Env[],
  });

  async function findOrThrow(trx: Db, p: Principal, id: string): Promise<ApiKeysTable> {
    const row = isId('key', id) ? await repo.findVisible(trx, visibility(p), id) : undefined;
    if (!row) throw new NotFoundError('API key');
    return row;
  }

  /**
   * A change to keys as the caller: re-checked last (401 expired_token, nothing written), or first when the caller
   * revokes its own key (the check would see its own revocation).
   */
  function writeKeys<T>(u: Unit<Principal>, fn: (c: Change<Principal>) => Promise<T>, checkFirst = false): Promise<T> {
    return u.run(fn, { changesKeys: true, checkFirst });
  }

  async function list(p: Principal, filter: { env?: Env }, page: PageRequest): Promise<Page<ApiKey>> {
    const v = visibility(p);
    const envs = filter.env ? v.envs.filter((e) => e === filter.env) : v.envs;
    if (envs.length === 0) return { items: [], total: 0, limit: page.limit, offset: page.offset, nextCursor: null };
    const result = await repo.listVisible(db, { ...v, envs }, page);
    const now = isoAt(clock.now());
    return { ...result, items: result.items.map((r) => toApiKey(r, now)) };
  }

  async function get(p: Principal, id: string): Promise<ApiKey> {
    return toApiKey(await findOrThrow(db, p, id), isoAt(clock.now()));
  }

  /**
   * A new key owned by the caller. Its scopes must be among the caller's own (a restricted key
   * cannot mint a broader one: 403); left out, they are the caller's. Throws ValidationError for an
   * `expires_at` not in the future.
   */
  async function create(u: Unit<Principal>, input: CreateKeyInput): Promise<CreatedApiKey> {
    const p = u.actor;
    if (p.userId === null) throw new ForbiddenError('Only a user can own an API key.');
    const owner = p.userId;
    const now = clock.now();
    if (input.expires_at !== undefined && Date.parse(input.expires_at) <= now) {
      throw fieldError('expires_at', 'not_in_future', 'expires_at must be a time in the future.');
    }
    if (!visibility(p).envs.includes(input.env)) {
      throw new ForbiddenError('A test key can only create test keys; use a live key or the console.');
    }
    assertWithinCaller(p, input.scopes ?? []);
    return writeKeys(u, async (c) => {
      const created = await deps.registry.create(c.unit, {
        userId: owner,
        env: input.env,
        name: input.name,
        scopes: input.scopes ?? (p.scopes === null ? null : [...p.scopes]),
        expiresAt: input.expires_at === undefined ? null : new Date(input.expires_at).toISOString(),
        createdBy: owner,
      });
      const row = (await repo.findById(c.trx, created.id)) as ApiKeysTable;
      return { ...toApiKey(row, isoAt(now)), key: created.key };
    });
  }

  /**
   * Revokes a key at once (docs/api.md#keys-scopes-and-roles): requests with it answer 401 expired_token, and a write with it that
   * has not committed has no effect (the exclusive revocation lock). Revoking a revoked key changes nothing.
   */
  async function revoke(u: Unit<Principal>, id: string): Promise<void> {
    const p = u.actor;
    const self = p.kind === 'api_key' && p.keyId === id;
    await writeKeys(
      u,
      async (c) => {
        const row = await findOrThrow(c.trx, p, id);
        await deps.registry.revoke(c.unit, row.id);
      },
      self,
    );
  }

  /**
   * Rolls a key: a successor with the same name, environment, scopes and owner, shown once; the old
   * key keeps working for `expireOldInS` seconds (0: stops now). 409 for a revoked or expired key.
   */
  async function roll(u: Unit<Principal>, id: string, expireOldInS: number): Promise<RolledApiKey> {
    const p = u.actor;
    return writeKeys(u, async (c) => {
      const old = await findOrThrow(c.trx, p, id);
      assertRollable(old, isoAt(clock.now()));
      assertWithinCaller(p, old.scopes === null ? SCOPES : (JSON.parse(old.scopes) as string[]));
      const rolled = await deps.registry.roll(c.unit, old.id, expireOldInS, p.userId);
      const row = (await repo.findById(c.trx, rolled.successor.id)) as ApiKeysTable;
      return {
        ...toApiKey(row, rolled.now),
        key: rolled.successor.key,
        previous_key: { id: old.id, expires_at: rolled.expiresAt },
      };
    });
  }

  /** A batch of the workspace's API keys (never their digests) after `after` (an id; null: from the first), oldest first: an export's walk. */
  async function exportBatch(workspaceId: string, after: string | null, limit: number) {
    const rows = await repo.exportBatch(db, workspaceId, after, limit);
    const now = isoAt(deps.clock.now());
    return { rows: rows.map((r) => toApiKey(r, now)), next: rows.at(-1)?.id ?? null };
  }

  return { list, get, create, revoke, roll, exportBatch };
}

/** A restricted key cannot obtain a key with scopes it lacks (by creating or rolling one): 403. */
function assertWithinCaller(p: Principal, scopes: readonly string[]): void {
  const wider = scopes.filter((s) => p.scopes !== null && !p.scopes.includes(s));
  if (wider.length > 0) {
    throw new ForbiddenError(`A key cannot obtain a key with scopes it does not have itself: ${wider.join(', ')}.`);
  }
}
export type KeysService = ReturnType<typeof createKeysService>;
