import type { Db } from '../../db/dialect.js';
import type { Role } from '../../db/types.js';
import { ForbiddenError, NotFoundError } from '../../lib/errors.js';
import type { Principal } from '../../lib/principal.js';
import type { KeysService } from '../keys/keys.service.js';
import { SCOPES } from '../keys/scopes.js';
import type { UsersService } from '../users/users.service.js';
import { consoleAuthRepository as repo } from './console-auth.repository.js';

/** D25: only admins manage members (and everyone's keys). Throws ForbiddenError. */
export function requireAdmin(principal: Principal): void {
  if (principal.role !== 'admin') throw new ForbiddenError('Only workspace admins can do this.');
}

/**
 * Members and keys as the console manages them, on top of the users and keys services: the
 * checks that the caller's workspace and role allow the change (D9, D24).
 */
export function createConsoleMembers(deps: { db: Db; users: UsersService; keys: KeysService }) {
  const { db, users, keys } = deps;

  async function memberOrThrow(principal: Principal, userId: string) {
    const m = await repo.userInWorkspace(db, principal.workspaceId, userId);
    if (!m) throw new NotFoundError('member');
    return m;
  }

  return {
    async setRole(principal: Principal, userId: string, role: Role) {
      requireAdmin(principal);
      await memberOrThrow(principal, userId);
      return users.setRole(userId, role);
    },
    async remove(principal: Principal, userId: string) {
      requireAdmin(principal);
      await memberOrThrow(principal, userId);
      return users.remove(userId);
    },
    /** Admins see every key of the workspace; others their own (D24). */
    async listKeys(principal: Principal) {
      const rows = await repo.keysWithOwners(
        db,
        principal.workspaceId,
        principal.role === 'admin' ? undefined : (principal.userId ?? ''),
      );
      return rows.map((r) => ({
        ...r,
        scopes: r.scopes === null ? [...SCOPES] : (JSON.parse(r.scopes) as string[]),
        status: r.revoked_at === null ? ('active' as const) : ('revoked' as const),
      }));
    },
    /** Everyone makes keys for themselves. */
    createKey(principal: Principal, input: { name: string; env: 'live' | 'test'; scopes?: string[] }) {
      return keys.create({
        userId: principal.userId ?? '',
        env: input.env,
        name: input.name,
        scopes: input.scopes ?? null,
      });
    },
    /** Admins revoke any key of the workspace, others their own (D24). */
    async revokeKey(principal: Principal, keyId: string) {
      const mine = await repo.keysWithOwners(
        db,
        principal.workspaceId,
        principal.role === 'admin' ? undefined : (principal.userId ?? ''),
      );
      if (!mine.some((k) => k.id === keyId)) throw new NotFoundError('API key');
      return keys.revoke(keyId);
    },
  };
}
export type ConsoleMembers = ReturnType<typeof createConsoleMembers>;
