import { Type } from '@sinclair/typebox';
import type { Db, Dialect } from '../../db/dialect.js';
import type { AuditTrail } from '../../kernel/audit-actions.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { newId } from '../../kernel/ids.js';
import { systemActor } from '../../kernel/principal.js';
import { SingleLine } from '../../kernel/schemas.js';
import { assertValid } from '../../lib/validate.js';
import { changesOf } from '../audit/changes.js';
import type { WriteRunner, WriteTx } from '../auth/write-runner.js';
import type { BillingService } from '../billing/billing.service.js';
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

/** Creates workspaces with their first admin and a live and a test key, in one transaction. */
export function createWorkspacesService(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  writeAs: WriteRunner;
  users: UsersService;
  keys: KeyRegistry;
  /** Makes the admin's single-use set-password link (the console's first sign-in). */
  links: Pick<ConsoleAuthService, 'makeLink'>;
  /** Starts the workspace's subscription (free) in its creation's transaction (docs/billing.md). */
  billing: Pick<BillingService, 'start'>;
}) {
  /**
   * A workspace with its first admin, a live and a test key and the admin's set-password link, recorded as one
   * `workspace.created` entry (its first) naming the admin and the keys by id (never a key or the link's token).
   */
  async function create(
    input: { name: string; adminEmail: string; adminName?: string },
    inTrx?: { trx: WriteTx; audit: AuditTrail },
  ): Promise<{
    workspace: Workspace;
    user: User;
    keys: { live: CreatedKey; test: CreatedKey };
    set_password_url: string;
  }> {
    assertValid(CreateWorkspaceInput, input);
    const run = async (trx: WriteTx, audit: AuditTrail) => {
      const now = isoAt(deps.clock.now());
      const workspace = { id: newId('workspace'), name: input.name, created_at: now, updated_at: now };
      await workspacesRepository.insert(trx, workspace);
      await deps.billing.start(trx, workspace.id, now);
      const user = await deps.users.create(
        { workspaceId: workspace.id, email: input.adminEmail, role: 'admin', name: input.adminName },
        trx,
        { notify: false },
      );
      // A new workspace's first admin and keys tell no one: there is no one else yet (docs/notifications.md).
      const first = { userId: user.id, notify: false };
      const live = await deps.keys.create({ ...first, env: 'live', name: 'Default live key' }, trx);
      const test = await deps.keys.create({ ...first, env: 'test', name: 'Default test key' }, trx);
      const link = await deps.links.makeLink(
        'set_password',
        user.email,
        { workspaceId: workspace.id, userId: user.id },
        trx,
      );
      audit.record({
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
    // Without a caller's transaction (tests, seeding): through the runner as the CLI's actor.
    return inTrx
      ? run(inTrx.trx, inTrx.audit)
      : deps.writeAs(systemActor('cli'), run, undefined, { changesKeys: true });
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

  /** Locks the workspace's row until `trx` ends: serialises a per-workspace limit (webhooks). */
  function lock(trx: Db, workspaceId: string): Promise<void> {
    return workspacesRepository.lock(trx, workspaceId);
  }

  return { create, list, any, lock };
}
