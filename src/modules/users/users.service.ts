import type { Db, Dialect } from '../../db/dialect.js';
import type { Role, UsersTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { fieldError, NotFoundError, ValidationError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import type { Principal } from '../../kernel/principal.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import { assertValid } from '../../lib/validate.js';
import { credentialEnded, type Unit, userLock } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import { isIanaTimezone } from './timezone.js';
import { usersRepository as repo, toUser } from './users.repository.js';
import { CreateUserInput, type PatchMeInput, RoleSchema, type User } from './users.schemas.js';

/** Profiles (docs/api.md#users), the member list, and the test-key profile overlay. */
export function createUsersService(deps: { db: Db; dialect: Dialect; clock: Clock }) {
  const { db, dialect, clock } = deps;

  async function me(principal: Principal): Promise<User> {
    const row = principal.userId === null ? undefined : await repo.find(db, principal.userId);
    if (!row) throw credentialEnded(principal);
    const overlay = principal.env === 'test' ? await repo.findOverlay(db, row.id) : undefined;
    return toUser(row, overlay);
  }

  /** PATCH /users/me: live keys write the profile, test keys the sandbox overlay (docs/api.md#environments). */
  async function patchMe(u: Unit<Principal>, input: PatchMeInput): Promise<User> {
    const principal = u.actor;
    if (input.timezone !== undefined && !isIanaTimezone(input.timezone)) {
      throw fieldError('timezone', 'invalid_value', `timezone "${input.timezone}" is not an IANA time zone name.`);
    }
    if (input.name === undefined && input.timezone === undefined) return me(principal); // docs/api.md#users: {} is a no-op
    return u.run(async ({ trx, audit }) => {
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

  /**
   * Adds a member to a workspace (`member.added`; `first`: a new workspace's first admin, whom no one is told
   * about). Throws ValidationError, NotFoundError.
   */
  async function create(u: Unit, input: CreateUserInput, opts: { first?: boolean } = {}): Promise<User> {
    assertValid(CreateUserInput, input);
    return u.run(
      async (c) => {
        const t = c.trx;
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
        await c.emit({ type: 'member.added', member: row, at: now, ...(opts.first ? { first: true } : {}) });
        return toUser(row);
      },
      { changesKeys: true },
    );
  }

  /** docs/api.md#keys-scopes-and-roles: changes a member's role; their keys narrow or widen at once. Throws NotFoundError. */
  async function setRole(u: Unit, userId: string, role: Role): Promise<User> {
    assertValid(RoleSchema, role);
    return u.run(
      async (c) => {
        const { trx } = c;
        const row = await repo.find(trx, userId);
        if (!row || row.removed_at) throw new NotFoundError('user');
        const updated_at = isoAt(Math.max(clock.now(), Date.parse(row.updated_at)));
        await repo.setMembership(trx, userId, { role, updated_at });
        // After the update, as in a key's revocation: writes of this user that checked before it commit first.
        await dialect.holdExclusive(trx, userLock(userId));
        await c.emit({
          type: 'member.role_changed',
          member: { ...row, role, updated_at },
          previousRole: row.role,
          at: updated_at,
        });
        return toUser({ ...row, role, updated_at });
      },
      { changesKeys: true },
    );
  }

  /** docs/api.md#keys-scopes-and-roles: removes a member; every key they hold answers 401 expired_token from now on. */
  async function remove(u: Unit, userId: string): Promise<{ id: string; removed_at: string }> {
    return u.run(
      async (c) => {
        const { trx } = c;
        const now = isoAt(clock.now());
        if (!(await repo.setMembership(trx, userId, { removed_at: now, updated_at: now }))) {
          throw new NotFoundError('user');
        }
        await dialect.holdExclusive(trx, userLock(userId));
        const row = await repo.find(trx, userId);
        if (row) await c.emit({ type: 'member.removed', member: row, at: now });
        return { id: userId, removed_at: now };
      },
      { changesKeys: true },
    );
  }

  /** Every current member of a workspace (CLI `users list`); NotFoundError for an unknown workspace. */
  async function listAll(workspaceId: string): Promise<User[]> {
    if (!(await repo.workspaceExists(db, workspaceId))) throw new NotFoundError('workspace');
    return (await repo.listAll(db, workspaceId)).map((u) => toUser(u));
  }

  return {
    /** A batch of the workspace's members (removed ones too) after `after` (an id; null: from the first), oldest first: an export's walk. */
    exportBatch: async (workspaceId: string, after: string | null, limit: number) => {
      const rows = await repo.exportBatch(db, workspaceId, after, limit);
      return {
        rows: rows.map((u) => ({ ...toUser(u), removed_at: u.removed_at ?? null })),
        next: rows.at(-1)?.id ?? null,
      };
    },
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
    /** The workspace's current members, in `db` (who is told of its deletion). */
    members: (inDb: Db, workspaceId: string) => repo.listAll(inDb, workspaceId),
    /** The workspace's current admins, in `db` (who is told about endpoint health, docs/api.md#notifications). */
    admins: async (inDb: Db, workspaceId: string) =>
      (await repo.listAll(inDb, workspaceId)).filter((u) => u.role === 'admin'),
  };
}
export type UsersService = ReturnType<typeof createUsersService>;
