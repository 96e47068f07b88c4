import type { Db } from '../../db/dialect.js';
import type { AuditAction, AuditTrail, Changes } from '../../kernel/audit-actions.js';
import { consoleAuthRepository as repo } from './console-auth.repository.js';

/**
 * Records a change to a person's own sign-in (a session, their password, their second factors) in the audit log of
 * each workspace they are a member of (or of `only` those), each entry by that workspace's user, on that user (or on
 * `target`): a person is one user per workspace, and each workspace's admins see their members' sign-ins. A person
 * who is no member anywhere (an email nobody has) records nothing. With `byRunner`, each entry names the runner's
 * actor instead (the CLI's `cli`).
 */
export async function recordForPerson(
  trx: Db,
  audit: AuditTrail,
  email: string,
  entry: {
    action: AuditAction;
    /** The entry's target; the person's user in each workspace when absent. */
    target?: { type: string; id: string };
    changes?: Changes;
    /** Only these workspaces (a single sign-on session reaches one). */
    only?: string | null;
    /** The entries name the runner's own actor (the CLI acting on someone's sign-in), not the person. */
    byRunner?: boolean;
  },
): Promise<number> {
  let n = 0;
  for (const m of await repo.memberships(trx, email)) {
    if (entry.only && m.workspace_id !== entry.only) continue;
    audit.record({
      action: entry.action,
      workspaceId: m.workspace_id,
      ...(entry.byRunner ? {} : { actor: { type: 'user' as const, id: m.user_id, name: m.name ?? email } }),
      target: entry.target ?? { type: 'user', id: m.user_id },
      env: null,
      ...(entry.changes ? { changes: entry.changes } : {}),
    });
    n++;
  }
  return n;
}

/** The `changes` of a secret that changed (a password): its value never appears, only that it changed. */
export const REDACTED = '[redacted]';
