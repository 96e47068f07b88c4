import { Type } from '@sinclair/typebox';
import type { Db, Dialect } from '../../db/dialect.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { newId } from '../../kernel/ids.js';
import { SingleLine } from '../../kernel/schemas.js';
import { assertValid } from '../../lib/validate.js';
import type { Change, Unit, WriteTx } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import type { ConsoleAuthService } from '../console-auth/console-auth.service.js';
import type { CreatedKey, KeyRegistry } from '../keys/key-registry.service.js';
import { type User, UserName } from '../users/users.schemas.js';
import type { UsersService } from '../users/users.service.js';
import { workspacesRepository } from './workspaces.repository.js';

const CreateWorkspaceInput = Type.Object({
  name: SingleLine({ minLength: 1, maxLength: 255, description: 'The workspace name.' }),
  adminEmail: Type.String({ format: 'email', maxLength: 254 }),
  adminName: Type.Optional(UserName),
});

export interface Workspace {
  id: string;
  name: string;
  created_at: string;
  updated_at: string;
}

/**
 * Creates workspaces with their first admin and a live and a test key, in one change; `workspace.created` is
 * emitted in it (billing starts its subscription on `free`, docs/billing.md).
 */
export function createWorkspacesService(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  users: Pick<UsersService, 'create'>;
  keys: Pick<KeyRegistry, 'create'>;
  /** Makes the admin's single-use set-password link (the console's first sign-in). */
  links: Pick<ConsoleAuthService, 'makeLink'>;
}) {
  /**
   * A workspace with its first admin, a live and a test key and the admin's set-password link, recorded as one
   * `workspace.created` entry (its first) naming the admin and the keys by id (never a key or the link's token).
   */
  async function create(
    u: Unit,
    input: { name: string; adminEmail: string; adminName?: string },
  ): Promise<{
    workspace: Workspace;
    user: User;
    keys: { live: CreatedKey; test: CreatedKey };
    set_password_url: string;
  }> {
    assertValid(CreateWorkspaceInput, input);
    const run = async (c: Change) => {
      const now = isoAt(deps.clock.now());
      const workspace = { id: newId('workspace'), name: input.name, created_at: now, updated_at: now };
      await workspacesRepository.insert(c.trx, workspace);
      await c.emit({ type: 'workspace.created', workspaceId: workspace.id, name: workspace.name, at: now });
      const user = await deps.users.create(
        c.unit,
        { workspaceId: workspace.id, email: input.adminEmail, role: 'admin', name: input.adminName },
        { first: true },
      );
      // A new workspace's first admin and keys tell no one: there is no one else yet (docs/notifications.md);
      // `workspace.created` below names them.
      const first = { userId: user.id, quiet: true };
      const live = await deps.keys.create(c.unit, { ...first, env: 'live', name: 'Default live key' });
      const test = await deps.keys.create(c.unit, { ...first, env: 'test', name: 'Default test key' });
      const link = await deps.links.makeLink(c.unit, 'set_password', user.email, {
        workspaceId: workspace.id,
        userId: user.id,
      });
      c.audit.record({
        action: 'workspace.created',
        workspaceId: workspace.id,
        target: { type: 'workspace', id: workspace.id },
        env: null,
        changes: changesOf(null, {
          name: workspace.name,
          admin_user_id: user.id,
          admin_email: user.email,
          live_key_id: live.id,
          test_key_id: test.id,
        }),
      });
      return { workspace, user, keys: { live, test }, set_password_url: link.url };
    };
    return u.run(run, { changesKeys: true });
  }

  /** Every workspace with its number of current members (CLI `workspaces list`). */
  async function list(): Promise<{ id: string; name: string; created_at: string; members: number }[]> {
    const rows = await workspacesRepository.listWithMemberCounts(deps.db);
    return rows.map((r) => ({ id: r.id, name: r.name, created_at: r.created_at, members: Number(r.members) }));
  }

  /** Whether any workspace exists: none on a fresh install (the server's first log line says what to do). */
  function any(): Promise<boolean> {
    return workspacesRepository.any(deps.db);
  }

  /**
   * Of `ids`, the workspaces whose deletion has begun or that are gone, read in the caller's change (writers that
   * buffer, such as the usage meter, drop what they kept for them: the deletion job must not find rows it left).
   */
  function deletingAmong(trx: WriteTx, ids: readonly string[]): Promise<Set<string>> {
    return workspacesRepository.deletingAmong(trx, ids);
  }

  return { create, list, any, deletingAmong };
}
