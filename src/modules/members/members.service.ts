import type { Db } from '../../db/dialect.js';
import type { Role } from '../../db/types.js';
import { NotFoundError } from '../../kernel/errors.js';
import { type Principal, requireAdmin } from '../../kernel/principal.js';
import type { UsersService } from '../users/users.service.js';

/**
 * Members as an admin manages them (the console's members page), on top of the users service: the checks that the caller's
 * workspace and role allow the change (docs/api.md#keys-scopes-and-roles).
 */
export function createMembersService(deps: { db: Db; users: UsersService }) {
  const { db, users } = deps;

  async function memberOrThrow(principal: Principal, userId: string) {
    const m = await users.memberOf(db, principal.workspaceId, userId);
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
  };
}
export type MembersService = ReturnType<typeof createMembersService>;
