import type { Db, Dialect } from '../../db/dialect.js';
import type { ApiKeysTable, Env, UsersTable } from '../../db/types.js';
import type { AuditRecord, Changes } from '../../kernel/audit-actions.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { ConflictError, fieldError, NotFoundError } from '../../kernel/errors.js';
import { isId, newId } from '../../kernel/ids.js';
import type { ApiKeyPrincipal } from '../../kernel/principal.js';
import { isScope, SCOPES } from '../../kernel/scopes.js';
import { CONTROL_CHARACTER_ISSUE, hasControlCharacter } from '../../kernel/text.js';
import { type Change, keyLock, type Unit, type WriteTx } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import {
  digestKey,
  digestsEqual,
  displayPrefix,
  generateKey,
  MALFORMED_KEY,
  malformedHeader,
  parseKey,
} from './key-format.js';
import { keysRepository } from './keys.repository.js';

export type VerifyResult =
  | { ok: true; principal: ApiKeyPrincipal }
  | { ok: false; code: 'missing_token' | 'invalid_token' | 'expired_token' | 'workspace_deleted'; message?: string };

/** A key-cache epoch: this connection's (SQLite, a number) or the one processes share in Redis (a string). */
export type KeysEpoch = number | string;

export interface CreatedKey {
  id: string;
  key: string;
  name: string;
  env: Env;
  scopes: string[];
  user_id: string;
  workspace_id: string;
  created_at: string;
}

/** How far ahead a key's expiry is told (docs/notifications.md#security-notifications: "expiring in 7 days"). */
export const EXPIRY_NOTICE_MS = 7 * 24 * 3_600_000;
const EXPIRY_BATCH = 200;

/**
 * The key registry: generation (docs/api.md#keys-scopes-and-roles), verification on every request (http/auth.ts),
 * issuing and revocation (the one revocation: the CLI's, new workspaces' and /v1/keys' through keys.service.ts),
 * last use, expiry notices. Its changes emit `key.*`; notifications subscribe.
 */
export function createKeyRegistry(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  /** The users module's: a user's row (removed ones included), whether a workspace exists. */
  users: {
    row(db: Db, id: string): Promise<UsersTable | undefined>;
    workspaceExists(db: Db, id: string): Promise<boolean>;
  };
}) {
  const { db, clock } = deps;
  // Performance (docs/performance.md#the-key-cache-and-its-epochs): verified keys, reused only while no write that may change keys or users has committed
  // since (a revocation, a role change or a removal moves the epoch on, so the next request re-reads the key,
  // docs/api.md#keys-scopes-and-roles). The epoch is the connection's (Dialect.keysEpoch, SQLite: verifyNow) or the one
  // processes share in Redis (PostgreSQL + Redis: http/auth.ts reads it, the rate limit's call confirms it; src/modules/keys/keys-epoch.ts).
  // Without either, every request reads its key.
  const epoch = deps.dialect.keysEpoch;
  // expiresMs: a cached key stops at its expires_at without any write (a rolled key, docs/api.md#keys-scopes-and-roles).
  const verified = new Map<string, { epoch: KeysEpoch; principal: ApiKeyPrincipal; expiresMs: number }>();
  const MAX_CACHED = 10_000;

  /** Creates a key for a user; the plaintext is in the result and nowhere else. */
  async function create(
    u: Unit,
    input: {
      userId: string;
      env: Env;
      name: string;
      scopes?: string[] | null;
      /** When the key stops working (docs/api.md#keys-scopes-and-roles); null or absent: never. */
      expiresAt?: string | null;
      /** The user who created it; null or absent for the CLI. */
      createdBy?: string | null;
      /** The key it succeeds, when made by rolling that key. */
      rolledFrom?: string | null;
      /**
       * Part of a larger change that tells and records it (a workspace's first keys, named by `workspace.created`;
       * a roll's successor, named by `key.rolled`): no `key.created` event and no entry of its own.
       */
      quiet?: boolean;
    },
  ): Promise<CreatedKey> {
    if (input.name.length === 0 || [...input.name].length > 100) {
      throw fieldError('name', 'invalid_length', 'name must be 1 to 100 characters.');
    }
    if (hasControlCharacter(input.name)) {
      const message = 'name must be a single line of text, without control characters such as line breaks or tabs.';
      throw fieldError('name', CONTROL_CHARACTER_ISSUE, message);
    }
    const scopes = input.scopes ?? null;
    for (const s of scopes ?? []) {
      if (!isScope(s))
        throw fieldError('scopes', 'invalid_value', `Unknown scope "${s}"; known: ${SCOPES.join(', ')}.`);
    }
    return u.run((c) => insert(c, input, scopes), { changesKeys: true });
  }

  /** create's change: the key's row, and its event and entry unless `quiet`. */
  async function insert(c: Change, input: Parameters<typeof create>[1], scopes: string[] | null): Promise<CreatedKey> {
    const { trx } = c;
    const user = await deps.users.row(trx, input.userId);
    if (!user || user.removed_at) throw new NotFoundError('user');
    const key = generateKey(input.env);
    const now = clock.now();
    const row = {
      id: newId('key', now),
      workspace_id: user.workspace_id,
      user_id: user.id,
      env: input.env,
      name: input.name,
      digest: digestKey(key),
      prefix: displayPrefix(key),
      scopes: scopes === null ? null : JSON.stringify([...new Set(scopes)]),
      created_at: isoAt(now),
      revoked_at: null,
      last_used_at: null,
      expires_at: input.expiresAt ?? null,
      created_by: input.createdBy ?? null,
      rolled_from: input.rolledFrom ?? null,
    };
    await keysRepository.insert(trx, row);
    if (!input.quiet) {
      await c.emit({ type: 'key.created', key: row, at: row.created_at });
      c.audit.record(keyEntry('key.created', row, changesOf(null, audited(row))));
    }
    return {
      id: row.id,
      key,
      name: row.name,
      env: row.env,
      scopes: scopes === null ? [...SCOPES] : [...new Set(scopes)],
      user_id: row.user_id,
      workspace_id: row.workspace_id,
      created_at: row.created_at,
    };
  }

  /** Checks an Authorization header value; never throws for a bad key: a tagged result. */
  async function verify(header: string | undefined): Promise<VerifyResult> {
    return verifyNow(header);
  }

  /**
   * verify, answering synchronously when no query is needed (malformed header, or a key verified
   * since the last committed write); a Promise otherwise. For the per-request hook (docs/performance.md#callback-style-hooks).
   */
  function verifyNow(header: string | undefined): VerifyResult | Promise<VerifyResult> {
    const parsed = parseHeader(header);
    if (!parsed.ok) return parsed;
    const at = epoch?.();
    if (at !== undefined) {
      const hit = cached(parsed.digest);
      if (hit && hit.epoch === at) return { ok: true, principal: hit.principal };
    }
    return verifyAt(parsed.digest, parsed.env, at);
  }

  /** The digest and environment of a well-formed `Bearer svc_…` header; the 401 code otherwise. */
  function parseHeader(
    header: string | undefined,
  ): { ok: true; digest: string; env: Env } | { ok: false; code: 'missing_token' | 'invalid_token'; message?: string } {
    if (header === undefined || header === '') return { ok: false, code: 'missing_token' };
    const m = /^Bearer ([^\s]+)$/.exec(header);
    if (!m) return { ok: false, code: 'invalid_token', message: malformedHeader(header) };
    const key = m[1] as string;
    const parsed = parseKey(key);
    if (!parsed) {
      return { ok: false, code: 'invalid_token', message: MALFORMED_KEY };
    }
    return { ok: true, digest: digestKey(key), env: parsed.env };
  }

  /**
   * The principal verified for `digest` and the epoch it was filed under, unless it has expired since;
   * valid only while that epoch is the current one (the caller checks: Dialect.keysEpoch, or the
   * shared epoch in Redis, src/modules/keys/keys-epoch.ts).
   */
  function cached(digest: string): { principal: ApiKeyPrincipal; epoch: KeysEpoch } | undefined {
    const hit = verified.get(digest);
    return hit && hit.expiresMs > clock.now() ? hit : undefined;
  }

  /**
   * Reads the key from the database and, with an epoch `at` read before the query, files the answer
   * under it: a write that committed meanwhile has moved the epoch on, so the entry is stale at once.
   */
  async function verifyAt(digest: string, env: Env, at: KeysEpoch | undefined): Promise<VerifyResult> {
    const row = await keysRepository.findByDigest(db, digest);
    if (!row || !digestsEqual(row.digest, digest) || row.env !== env) {
      return { ok: false, code: 'invalid_token' };
    }
    // docs/api.md#keys-scopes-and-roles: a key whose owner was removed stops working like a revoked one.
    if (row.revoked_at !== null || row.role === null) return { ok: false, code: 'expired_token' };
    const expiresMs = row.expires_at === null ? Number.POSITIVE_INFINITY : Date.parse(row.expires_at);
    if (expiresMs <= clock.now()) return { ok: false, code: 'expired_token' };
    // docs/data-lifecycle.md#deleting-a-workspace: from its scheduling on, the workspace's keys answer 401.
    if (row.deletion_scheduled_at !== null) return { ok: false, code: 'workspace_deleted' };
    const principal: ApiKeyPrincipal = Object.freeze({
      kind: 'api_key',
      keyId: row.id,
      keyName: row.name,
      userId: row.user_id,
      workspaceId: row.workspace_id,
      env: row.env,
      role: row.role,
      scopes: row.scopes === null ? null : Object.freeze(JSON.parse(row.scopes) as string[]),
      ...(row.payment_state === 'unpaid' ? { unpaid: true as const } : {}),
    });
    if (at !== undefined) {
      if (verified.size >= MAX_CACHED) verified.clear();
      verified.set(digest, { epoch: at, principal, expiresMs });
    }
    return { ok: true, principal };
  }

  /** Keys of a workspace, never with secrets. */
  async function list(workspaceId: string) {
    if (!(await deps.users.workspaceExists(db, workspaceId))) throw new NotFoundError('workspace');
    const rows = await keysRepository.listByWorkspace(db, workspaceId);
    return rows.map((r) => ({
      ...r,
      scopes: r.scopes === null ? [...SCOPES] : (JSON.parse(r.scopes) as string[]),
    }));
  }

  /**
   * Takes the revocation lock of every key of the workspace exclusive, in `trx` (after a change that stops them all:
   * a scheduled deletion): writes with one of them already past their check finish first, later ones see the change.
   */
  async function holdWorkspaceKeys(trx: WriteTx, workspaceId: string): Promise<void> {
    for (const id of await keysRepository.idsOfWorkspace(trx, workspaceId)) {
      await deps.dialect.holdExclusive(trx, keyLock(id));
    }
  }

  /**
   * Revokes a key at once (docs/api.md#keys-scopes-and-roles); throws NotFoundError for an unknown id. The exclusive
   * revocation lock waits only for writes with the key already running; any write that commits later sees the
   * revocation. Revoking a revoked key changes nothing (its first revocation's time is answered). The one
   * revocation: /v1/keys (keys.service.ts), the console and the CLI all come here.
   */
  async function revoke(u: Unit, keyId: string): Promise<{ id: string; revoked_at: string }> {
    if (!isId('key', keyId)) throw new NotFoundError('API key');
    const at = isoAt(clock.now());
    const revokedAt = await u.run(
      async (c) => {
        const { trx } = c;
        if (await keysRepository.revoke(trx, keyId, at)) {
          // After the update: a write that changed the same row first must not wait for us while we wait for it.
          await deps.dialect.holdExclusive(trx, keyLock(keyId));
          const row = await keysRepository.findById(trx, keyId);
          if (row) {
            await c.emit({ type: 'key.revoked', key: row, at });
            c.audit.record(keyEntry('key.revoked', row, { revoked_at: { before: null, after: at } }));
          }
          return at;
        }
        const existing = await keysRepository.findById(trx, keyId);
        if (!existing) throw new NotFoundError('API key');
        return existing.revoked_at ?? at; // revoked before: the first revocation's time
      },
      { changesKeys: true },
    );
    return { id: keyId, revoked_at: revokedAt };
  }

  /**
   * Rolls a key (docs/api.md#keys-scopes-and-roles): a successor with the same name, environment, scopes and owner
   * (`created_by` the user who rolls, null for the CLI), told by one `key.rolled` event and entry on the old key;
   * the old key keeps working for `expireOldInS` seconds (0: stops now). Who may roll which key is the caller's
   * rule (keys.service.ts for /v1/keys); the CLI rolls any. NotFoundError for an unknown id, ConflictError for a
   * revoked or expired key.
   */
  async function roll(
    u: Unit,
    keyId: string,
    expireOldInS: number,
    createdBy: string | null,
  ): Promise<{ old: ApiKeysTable; successor: CreatedKey; expiresAt: string; now: string }> {
    return u.run(
      async (c) => {
        const { trx } = c;
        const old = isId('key', keyId) ? await keysRepository.findById(trx, keyId) : undefined;
        if (!old) throw new NotFoundError('API key');
        const nowMs = clock.now();
        const now = isoAt(nowMs);
        assertRollable(old, now);
        let expiresAt = isoAt(nowMs + expireOldInS * 1000);
        if (old.expires_at != null && old.expires_at < expiresAt) expiresAt = old.expires_at;
        if (expireOldInS === 0) await deps.dialect.holdExclusive(trx, keyLock(old.id));
        await keysRepository.setExpiry(trx, old.id, expiresAt, now);
        const successor = await create(c.unit, {
          userId: old.user_id,
          env: old.env,
          name: old.name,
          scopes: old.scopes === null ? null : (JSON.parse(old.scopes) as string[]),
          createdBy,
          rolledFrom: old.id,
          quiet: true,
        });
        await c.emit({ type: 'key.rolled', key: old, at: now, successorId: successor.id, oldExpiresAt: expiresAt });
        // One entry, on the old key, naming its successor (no key.created for the successor).
        c.audit.record(
          keyEntry('key.rolled', old, {
            expires_at: { before: old.expires_at ?? null, after: expiresAt },
            successor_id: { before: null, after: successor.id },
          }),
        );
        return { old, successor, expiresAt, now };
      },
      { changesKeys: true },
    );
  }

  /**
   * Moves keys' `last_used_at` forward to the minute they were last used, in the usage flush's
   * transaction (docs/usage.md). It does not change whether a key verifies, so cached keys stay valid.
   */
  function recordUse(trx: WriteTx, lastUsed: ReadonlyMap<string, number>): Promise<void> {
    return keysRepository.touchLastUsed(
      trx,
      [...lastUsed].map(([keyId, minute]) => [keyId, isoAt(minute)] as const),
    );
  }

  /**
   * Writes `key.expiring` (to the owner and the admins, docs/notifications.md#security-notifications)
   * for every unrevoked key whose `expires_at` is within the next 7 days (that millisecond included)
   * and still ahead, once per key: the conditional mark in the notice's transaction lets one of
   * several workers win. A rolled key was told by `key.rolled`. Returns how many keys were told.
   */
  async function notifyExpiring(u: Unit): Promise<number> {
    let told = 0;
    for (;;) {
      const nowMs = clock.now();
      const now = isoAt(nowMs);
      const due = await keysRepository.expiringUnnoticed(db, now, isoAt(nowMs + EXPIRY_NOTICE_MS), EXPIRY_BATCH);
      if (due.length === 0) return told;
      told += await u.run(async (c) => {
        const { trx } = c;
        let n = 0;
        for (const k of due) {
          if (!(await keysRepository.markExpiryNoticed(trx, k.id, now))) continue;
          const owner = await deps.users.row(trx, k.user_id);
          if (!owner || owner.removed_at) continue; // the key stopped working with its owner's removal
          await c.emit({ type: 'key.expiring', key: k, at: now, expiresAt: k.expires_at ?? now });
          n++;
        }
        return n;
      });
      if (due.length < EXPIRY_BATCH) return told;
    }
  }

  return {
    create,
    verify,
    verifyNow,
    holdWorkspaceKeys,
    parseHeader,
    cached,
    verifyAt,
    list,
    revoke,
    roll,
    recordUse,
    notifyExpiring,
    /** For other modules, in their transaction: a key's row (its name, for the audit log). */
    row: keysRepository.findById,
  };
}
export type KeyRegistry = ReturnType<typeof createKeyRegistry>;

/** Throws ConflictError `key_revoked` or `key_expired` unless the key is active at `now` (a roll needs one). */
export function assertRollable(row: ApiKeysTable, now: string): void {
  const state =
    row.revoked_at !== null ? 'revoked' : row.expires_at != null && row.expires_at <= now ? 'expired' : 'active';
  if (state !== 'active') {
    throw new ConflictError(`key_${state}`, `This API key is ${state}; create a new key instead of rolling it.`);
  }
}

/** A key's fields as its audit entries show them: never its digest or its prefix (part of the key). */
export function audited(row: ApiKeysTable) {
  return {
    name: row.name,
    env: row.env,
    user_id: row.user_id,
    scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as string[]),
    expires_at: row.expires_at ?? null,
  };
}

/** The audit entry of a change to a key: in the key's workspace and environment. */
export function keyEntry(
  action: 'key.created' | 'key.revoked' | 'key.rolled',
  row: ApiKeysTable,
  changes: Changes,
): AuditRecord {
  return { action, target: { type: 'key', id: row.id }, env: row.env, workspaceId: row.workspace_id, changes };
}
