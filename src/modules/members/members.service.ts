import type { Db } from '../../db/dialect.js';
import type { Role, UsersTable } from '../../db/types.js';
import { NotFoundError } from '../../kernel/errors.js';
import { type Principal, requireAdmin } from '../../kernel/principal.js';
import type { Change, Unit } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import type { ConsoleAuthService } from '../console-auth/console-auth.service.js';
import type { User } from '../users/users.schemas.js';
import type { UsersService } from '../users/users.service.js';

/**
 * Members as an admin manages them (the console's members page, `wsvc users invite`), on top of the
 * users service: invites (the user, their single-use link from console-auth and its email, in one
 * change), role changes and removals, with the checks that the caller's workspace and role allow
 * the change (docs/api.md#keys-scopes-and-roles).
 */
export function createMembersService(deps: {
  users: UsersService;
  /** console-auth's: the invite link, the workspace's name, the invites not yet used. */
  links: Pick<ConsoleAuthService, 'makeLink' | 'membershipsIn' | 'pendingInvites'>;
}) {
  const { users } = deps;

  /**
   * An admin's change, re-checked at commit (session open, still an admin then); users' role or removal may change.
   * An admin's change to their own membership is checked before it (the check after would see the change).
   */
  const asAdmin = <T>(u: Unit<Principal>, fn: (c: Change<Principal>) => Promise<T>, target?: string) =>
    u.run(fn, { changesKeys: true, adminOnly: true, checkFirst: target === u.actor.userId });

  /**
   * Adds a member with a role, makes their invite link (valid 7 days) and writes its email, in one change,
   * recorded as `member.invited` by the change's actor (never the link).
   */
  async function invite(
    u: Unit,
    workspaceId: string,
    input: { email: string; role: Role; name?: string },
  ): Promise<{ user: User; invite_url: string; expires_at: string }> {
    return u.run(
      async (c) => {
        const user = await add(c.unit, { workspaceId, email: input.email, role: input.role, name: input.name });
        const link = await deps.links.makeLink(c.unit, 'invite', user.email, { workspaceId, userId: user.id });
        const ws = (await deps.links.membershipsIn(c.trx, user.email)).find((m) => m.workspace_id === workspaceId);
        await c.emit({
          type: 'link.issued',
          notice: {
            type: 'invite',
            workspaceId,
            userId: user.id,
            url: link.url,
            data: { workspace_name: ws?.workspace_name ?? workspaceId, role: user.role, expires_at: link.expires_at },
          },
        });
        return { user, invite_url: link.url, expires_at: link.expires_at };
      },
      { changesKeys: true },
    );
  }

  /** Adds a member (an invite; `wsvc users create`), recorded as `member.invited`. */
  async function add(u: Unit, input: { workspaceId: string; email: string; role: Role; name?: string }): Promise<User> {
    return u.run(
      async (c) => {
        const user = await users.create(c.unit, input);
        c.audit.record({
          action: 'member.invited',
          workspaceId: user.workspace_id,
          target: { type: 'user', id: user.id },
          env: null,
          changes: changesOf(null, { email: user.email, name: user.name, role: user.role }),
        });
        return user;
      },
      { changesKeys: true },
    );
  }

  async function memberOrThrow(trx: Db, principal: Principal, userId: string) {
    const m = await users.memberOf(trx, principal.workspaceId, userId);
    if (!m) throw new NotFoundError('member');
    return m;
  }

  /** A member's new role (the console's, the CLI's), recorded as `member.role_changed` when it differs. */
  async function changeRole(u: Unit, userId: string, role: Role): Promise<User> {
    return u.run(
      async (c) => {
        const before = await users.row(c.trx, userId);
        const user = await users.setRole(c.unit, userId, role);
        if (before && before.role !== user.role) {
          c.audit.record({
            action: 'member.role_changed',
            workspaceId: user.workspace_id,
            target: { type: 'user', id: user.id },
            env: null,
            changes: changesOf({ role: before.role }, { role: user.role }),
          });
        }
        return user;
      },
      { changesKeys: true },
    );
  }

  /** Removes a member (the console's, the CLI's), recorded as `member.removed`. */
  async function removeMember(u: Unit, userId: string): Promise<{ id: string; removed_at: string }> {
    return u.run(
      async (c) => {
        const out = await users.remove(c.unit, userId);
        const row: UsersTable | undefined = await users.row(c.trx, userId);
        if (row) {
          c.audit.record({
            action: 'member.removed',
            workspaceId: row.workspace_id,
            target: { type: 'user', id: row.id },
            env: null,
            changes: changesOf({ email: row.email, name: row.name, role: row.role }, null),
          });
        }
        return out;
      },
      { changesKeys: true },
    );
  }

  return {
    invite,
    add,
    changeRole,
    removeMember,
    /** The console's invite (POST /members): an admin's, re-checked at commit like every change of theirs. */
    async inviteAs(u: Unit<Principal>, input: { email: string; role: Role; name?: string }) {
      requireAdmin(u.actor);
      return asAdmin(u, (c) => invite(c.unit, u.actor.workspaceId, input));
    },
    /** The workspace's invites not used yet (the members page). */
    pendingInvites: (workspaceId: string) => deps.links.pendingInvites(workspaceId),
    async setRole(u: Unit<Principal>, userId: string, role: Role) {
      requireAdmin(u.actor);
      return asAdmin(
        u,
        async (c) => {
          await memberOrThrow(c.trx, u.actor, userId);
          return changeRole(c.unit, userId, role);
        },
        userId,
      );
    },
    async remove(u: Unit<Principal>, userId: string) {
      requireAdmin(u.actor);
      return asAdmin(
        u,
        async (c) => {
          await memberOrThrow(c.trx, u.actor, userId);
          return removeMember(c.unit, userId);
        },
        userId,
      );
    },
  };
}
export type MembersService = ReturnType<typeof createMembersService>;
