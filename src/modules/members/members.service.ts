import type { Db } from '../../db/dialect.js';
import type { Role } from '../../db/types.js';
import type { AuditTrail } from '../../kernel/audit-actions.js';
import { NotFoundError } from '../../kernel/errors.js';
import { type Principal, requireAdmin, systemActor } from '../../kernel/principal.js';
import { changesOf } from '../audit/changes.js';
import type { WriteRunner, WriteTx } from '../auth/write-runner.js';
import type { ConsoleAuthService } from '../console-auth/console-auth.service.js';
import type { NotificationsService } from '../notifications/notifications.service.js';
import type { User } from '../users/users.schemas.js';
import type { UsersService } from '../users/users.service.js';

/**
 * Members as an admin manages them (the console's members page, `wsvc users invite`), on top of the
 * users service: invites (the user, their single-use link from console-auth and its email, in one
 * transaction), role changes and removals, with the checks that the caller's workspace and role allow
 * the change (docs/api.md#keys-scopes-and-roles).
 */
export function createMembersService(deps: {
  /** The console's changes run as its session's principal, re-checked at commit (session open, still an admin). */
  writeAs: WriteRunner;
  users: UsersService;
  /** console-auth: the invite link, the workspace's name, the invites not yet used. */
  links: Pick<ConsoleAuthService, 'makeLink' | 'membershipsIn' | 'pendingInvites'>;
  /** The notification outbox (docs/notifications.md): the invite email, in the invite's transaction. */
  notifications?: Pick<NotificationsService, 'linkNotice'>;
}) {
  const { users, writeAs } = deps;
  /** An admin's change: the principal re-checked at commit, still an admin then; users' role or removal may change. */
  /** An admin's change to their own membership is checked before it (the check after would see the change). */
  const asAdmin = <T>(principal: Principal, fn: (trx: WriteTx, audit: AuditTrail) => Promise<T>, target?: string) =>
    writeAs(principal, fn, undefined, { changesKeys: true, adminOnly: true, checkFirst: target === principal.userId });

  /**
   * Adds a member with a role, makes their invite link (valid 7 days) and writes its email, in one transaction,
   * recorded as `member.invited` by the transaction's actor (never the link).
   */
  async function invite(
    workspaceId: string,
    input: { email: string; role: Role; name?: string },
    inTrx?: { trx: WriteTx; audit: AuditTrail },
  ): Promise<{ user: User; invite_url: string; expires_at: string }> {
    const run = async (trx: WriteTx, audit: AuditTrail) => {
      const user = await add(trx, audit, { workspaceId, email: input.email, role: input.role, name: input.name });
      const link = await deps.links.makeLink('invite', user.email, { workspaceId, userId: user.id }, trx);
      if (deps.notifications) {
        const ws = (await deps.links.membershipsIn(trx, user.email)).find((m) => m.workspace_id === workspaceId);
        await deps.notifications.linkNotice(trx, {
          type: 'invite',
          workspaceId,
          userId: user.id,
          url: link.url,
          data: { workspace_name: ws?.workspace_name ?? workspaceId, role: user.role, expires_at: link.expires_at },
        });
      }
      return { user, invite_url: link.url, expires_at: link.expires_at };
    };
    // Without a caller's transaction (tests, seeding): through the runner as the CLI's actor.
    return inTrx ? run(inTrx.trx, inTrx.audit) : writeAs(systemActor('cli'), run, undefined, { changesKeys: true });
  }

  /** Adds a member in `trx` (an invite; `wsvc users create`), recorded as `member.invited`. */
  async function add(
    trx: WriteTx,
    audit: AuditTrail,
    input: { workspaceId: string; email: string; role: Role; name?: string },
  ): Promise<User> {
    const user = await users.create(input, trx);
    audit.record({
      action: 'member.invited',
      workspaceId: user.workspace_id,
      target: { type: 'user', id: user.id },
      env: null,
      changes: changesOf(null, { email: user.email, name: user.name, role: user.role }),
    });
    return user;
  }

  async function memberOrThrow(trx: Db, principal: Principal, userId: string) {
    const m = await users.memberOf(trx, principal.workspaceId, userId);
    if (!m) throw new NotFoundError('member');
    return m;
  }

  /** A member's new role in `trx` (the console's, the CLI's), recorded as `member.role_changed` when it differs. */
  async function changeRole(trx: WriteTx, audit: AuditTrail, userId: string, role: Role): Promise<User> {
    const before = await users.row(trx, userId);
    const user = await users.setRole(userId, role, trx);
    if (before && before.role !== user.role) {
      audit.record({
        action: 'member.role_changed',
        workspaceId: user.workspace_id,
        target: { type: 'user', id: user.id },
        env: null,
        changes: changesOf({ role: before.role }, { role: user.role }),
      });
    }
    return user;
  }

  /** Removes a member in `trx` (the console's, the CLI's), recorded as `member.removed`. */
  async function removeMember(trx: WriteTx, audit: AuditTrail, userId: string) {
    const out = await users.remove(userId, trx);
    const row = await users.row(trx, userId);
    if (row) {
      audit.record({
        action: 'member.removed',
        workspaceId: row.workspace_id,
        target: { type: 'user', id: row.id },
        env: null,
        changes: changesOf({ email: row.email, name: row.name, role: row.role }, null),
      });
    }
    return out;
  }

  return {
    invite,
    add,
    changeRole,
    removeMember,
    /** The console's invite (POST /members): an admin's, re-checked at commit like every change of theirs. */
    async inviteAs(principal: Principal, input: { email: string; role: Role; name?: string }) {
      requireAdmin(principal);
      return asAdmin(principal, (trx, audit) => invite(principal.workspaceId, input, { trx, audit }));
    },
    /** The workspace's invites not used yet (the members page). */
    pendingInvites: (workspaceId: string) => deps.links.pendingInvites(workspaceId),
    async setRole(principal: Principal, userId: string, role: Role) {
      requireAdmin(principal);
      return asAdmin(
        principal,
        async (trx, audit) => {
          await memberOrThrow(trx, principal, userId);
          return changeRole(trx, audit, userId, role);
        },
        userId,
      );
    },
    async remove(principal: Principal, userId: string) {
      requireAdmin(principal);
      return asAdmin(
        principal,
        async (trx, audit) => {
          await memberOrThrow(trx, principal, userId);
          return removeMember(trx, audit, userId);
        },
        userId,
      );
    },
  };
}
export type MembersService = ReturnType<typeof createMembersService>;
