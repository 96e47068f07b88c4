import { Type } from '@sinclair/typebox';
import type { Db, Dialect } from '../../db/dialect.js';
import { type Clock, isoAt } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { assertValid } from '../../lib/validate.js';
import type { CreatedKey, KeysService } from '../keys/keys.service.js';
import type { User } from '../users/users.schemas.js';
import type { UsersService } from '../users/users.service.js';
import { workspacesRepository } from './workspaces.repository.js';

const CreateWorkspaceInput = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  adminEmail: Type.String({ format: 'email', maxLength: 254 }),
  adminName: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
});

export interface Workspace {
  id: string;
  name: string;
  created_at: string;
  updated_at: string;
}

/** Creates workspaces with their first admin and a live and a test key, in one transaction. */
export function createWorkspacesService(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  users: UsersService;
  keys: KeysService;
}) {
  async function create(input: { name: string; adminEmail: string; adminName?: string }): Promise<{
    workspace: Workspace;
    user: User;
    keys: { live: CreatedKey; test: CreatedKey };
  }> {
    assertValid(CreateWorkspaceInput, input);
    return deps.dialect.writeTransaction(deps.db, async (trx) => {
      const now = isoAt(deps.clock.now());
      const workspace = { id: newId('workspace'), name: input.name, created_at: now, updated_at: now };
      await workspacesRepository.insert(trx, workspace);
      const user = await deps.users.create(
        { workspaceId: workspace.id, email: input.adminEmail, role: 'admin', name: input.adminName },
        trx,
      );
      const live = await deps.keys.create({ userId: user.id, env: 'live', name: 'Default live key' }, trx);
      const test = await deps.keys.create({ userId: user.id, env: 'test', name: 'Default test key' }, trx);
      return { workspace, user, keys: { live, test } };
    });
  }

  /** Every workspace with its number of current members (CLI `workspaces list`). */
  async function list(): Promise<{ id: string; name: string; created_at: string; members: number }[]> {
    const rows = await workspacesRepository.listWithMemberCounts(deps.db);
    return rows.map((r) => ({ id: r.id, name: r.name, created_at: r.created_at, members: Number(r.members) }));
  }

  return { create, list };
}
export type WorkspacesService = ReturnType<typeof createWorkspacesService>;
