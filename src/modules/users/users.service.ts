import type { Db, Dialect } from '../../db/dialect.js';
import type { Role, UsersTable } from '../../db/types.js';
import type { AuditTrail } from '../../kernel/audit-actions.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { fieldError, NotFoundError, ValidationError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { type Principal, systemActor } from '../../kernel/principal.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import { assertValid } from '../../lib/validate.js';
import { changesOf } from '../audit/changes.js';
import { credentialEnded, userLock, type WriteRunner, type WriteTx } from '../auth/write-runner.js';
import type { SecurityNotice } from '../notifications/notifications.service.js';
import { isIanaTimezone } from './timezone.js';
import { usersRepository as repo, toUser } from './users.repository.js';
import { CreateUserInput, type PatchMeInput, RoleSchema, type User } from './users.schemas.js';

/** Profiles (docs/api.md#users), the member list, and the test-key profile overlay. */
export function createUsersService(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  writeAs: WriteRunner;
  /** Security notifications (docs/notifications.md): member added, removed, role changed; in the change's transaction. */
  notify?: (trx: WriteTx, notice: SecurityNotice) => Promise<void>;
}) {
  const { db, dialect, clock, writeAs } = deps;

  async function me(principal: Principal): Promise<User> {
    const row = principal.userId === null ? undefined : await repo.find(db, principal.userId);
    if (!row) throw credentialEnded(principal);
    const overlay = principal.env === 'test' ? await repo.findOverlay(db, row.id) : undefined;
    return toUser(row, overlay);
  }

  /** PATCH /users/me: live keys write the profile, test keys the sandbox overlay (docs/api.md#environments). */
  async function patchMe(principal: Principal, input: PatchMeInput): Promise<User> {
    if (input.timezone !== undefined && !isIanaTimezone(input.timezone)) {
      throw fieldError('timezone', 'invalid_value', `timezone "${input.timezone}" is not an IANA time zone name.`);
    }
    if (input.name === undefined && input.timezone === undefined) return me(principal); // docs/api.md#users: {} is a no-op
    return writeAs(principal, async (trx, audit) => {
      const row = principal.userId === null ? undefined : await repo.find(trx, principal.userId);
      if (!row) throw credentialEnded(principal);
      // The profile's own fields only; the test environment's overlay is recorded as a test change.
      const record = (before: User, after: User) => {
        const changes = changesOf(
          { name: before.name, timezone: before.timezone },
          { name: after.name, timezone: after.timezone },
        );
        if (Object.keys(changes).length === 0) return;
        const env = principal.env === 'test' ? 'test' : null;
        audit.record({ action: 'user.updated', target: { type: 'user', id: row.id }, env, changes });
      };
      const now = clock.now();
      if (principal.env === 'test') {
        const prev = await repo.findOverlay(trx, row.id);
        const overlay = {
          user_id: row.id,
          name: input.name ?? prev?.name ?? null,
          timezone: input.timezone ?? prev?.timezone ?? null,
          updated_at: isoAt(Math.max(now, Date.parse(prev?.updated_at ?? row.updated_at))),
        };
        await repo.upsertOverlay(trx, overlay);
        const after = toUser(row, overlay);
        record(toUser(row, prev), after);
        return after;
      }
      const set: Partial<UsersTable> = { updated_at: isoAt(Math.max(now, Date.parse(row.updated_at))) };
      if (input.name !== undefined) set.name = input.name;
      if (input.timezone !== undefined) set.timezone = input.timezone;
      await repo.update(trx, row.id, set);
      const after = toUser({ ...row, ...set });
      record(toUser(row), after);
      return after;
    });
  }

  async function list(principal: Principal, page: PageRequest): Promise<Page<User>> {
    const p = await repo.list(db, principal.workspaceId, page);
    const overlays =
      principal.env === 'test'
        ? await repo.overlaysFor(
            db,
            p.items.map((u) => u.id),
          )
        : new Map();
    return { ...p, items: p.items.map((u) => toUser(u, overlays.get(u.id))) };
  }

  /** Adds a member to a workspace (CLI). Throws ValidationError, NotFoundError. */
  async function create(input: CreateUserInput, trx?: WriteTx, opts: { notify?: boolean } = {}): Promise<User> {
    assertValid(CreateUserInput, input);
    const run = async (t: WriteTx) => {
      if (!(await repo.workspaceExists(t, input.workspaceId))) throw new NotFoundError('workspace');
      const now = isoAt(clock.now());
      const row: UsersTable = {
        id: newId('user'),
        workspace_id: input.workspaceId,
        email: input.email,
        name: input.name ?? null,
        role: input.role,
        timezone: null,
        created_at: now,
        updated_at: now,
      };
      try {
        await repo.insert(t, row);
      } catch (err) {
        // Unique among current members only (migration 004): a removed user's email is free again.
        if (dialect.isUniqueViolation(err)) {
          throw new ValidationError('A user with this email is already in the workspace.', [
            { field: 'email', issue: 'taken', message: 'email is already a member of this workspace.' },
          ]);
        }
        throw err;
      }
      if (opts.notify !== false) {
        await deps.notify?.(t, {
          type: 'member.added',
          workspaceId: row.workspace_id,
          users: [],
          admins: true,
          except: row.id,
          data: { at: now, member: { id: row.id, email: row.email, role: row.role } },
        });
      }
      return toUser(row);
    };
    return within(trx, run);
  }

  /**
   * Runs `fn` in the caller's transaction (the CLI's, the console's, as their actor), or else through the write
   * runner as the CLI's actor (the callers that pass none: tests and seeding); users' role and removal may change.
   */
  function within<T>(trx: WriteTx | undefined, fn: (trx: WriteTx, audit?: AuditTrail) => Promise<T>): Promise<T> {
    return trx ? fn(trx) : writeAs(systemActor('cli'), fn, undefined, { changesKeys: true });
  }

  /** docs/api.md#keys-scopes-and-roles: changes a member's role; their keys narrow or widen at once. Throws NotFoundError. */
  async function setRole(userId: string, role: Role, inTrx?: WriteTx): Promise<User> {
    assertValid(RoleSchema, role);
    return within(inTrx, async (trx) => {
      const row = await repo.find(trx, userId);
      if (!row || row.removed_at) throw new NotFoundError('user');
      const updated_at = isoAt(Math.max(clock.now(), Date.parse(row.updated_at)));
      await repo.setMembership(trx, userId, { role, updated_at });
      // After the update, as in keys.revoke: writes of this user that checked before it commit first.
      await dialect.holdExclusive(trx, userLock(userId));
      if (role !== row.role) {
        await deps.notify?.(trx, {
          type: 'member.role_changed',
          workspaceId: row.workspace_id,
          users: [row.id],
          admins: true,
          data: { at: updated_at, member: { id: row.id, email: row.email, role, previous_role: row.role } },
        });
      }
      return toUser({ ...row, role, updated_at });
    });
  }

  /** docs/api.md#keys-scopes-and-roles: removes a member; every key they hold answers 401 expired_token from now on. */
  async function remove(userId: string, inTrx?: WriteTx): Promise<{ id: string; removed_at: string }> {
    return within(inTrx, async (trx) => {
      const now = isoAt(clock.now());
      if (!(await repo.setMembership(trx, userId, { removed_at: now, updated_at: now }))) {
        throw new NotFoundError('user');
      }
      await dialect.holdExclusive(trx, userLock(userId));
      const row = await repo.find(trx, userId);
      if (row) {
        // The admins who remain (a removed admin is no longer one).
        await deps.notify?.(trx, {
          type: 'member.removed',
          workspaceId: row.workspace_id,
          users: [],
          admins: true,
          data: { at: now, member: { id: row.id, email: row.email, role: row.role } },
        });
      }
      return { id: userId, removed_at: now };
    });
  }

  /** Every current member of a workspace (CLI `users list`); NotFoundError for an unknown workspace. */
  async function listAll(workspaceId: string): Promise<User[]> {
    if (!(await repo.workspaceExists(db, workspaceId))) throw new NotFoundError('workspace');
    return (await repo.listAll(db, workspaceId)).map((u) => toUser(u));
  }

  return {
    me,
    patchMe,
    list,
    listAll,
    create,
    setRole,
    remove,
    /** For other modules, in their transaction: the user's row (removed ones included). */
    row: repo.find,
    /** Whether the user is a current (not removed) member. */
    isMember: repo.isMember,
    /** Whether the workspace exists. */
    workspaceExists: repo.workspaceExists,
    /** The current member `userId` of `workspaceId` (id, email, role), if any. */
    memberOf: repo.memberOf,
    /** The workspace's current admins, in `db` (who is told about endpoint health, docs/api.md#notifications). */
    admins: async (inDb: Db, workspaceId: string) =>
      (await repo.listAll(inDb, workspaceId)).filter((u) => u.role === 'admin'),
  };
}
export type UsersService = ReturnType<typeof createUsersService>;
