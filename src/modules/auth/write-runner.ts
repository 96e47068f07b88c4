import { type Db, type Dialect, isCredentialEnded } from '../../db/dialect.js';
import type { AuditRecord, AuditTrail } from '../../kernel/audit-actions.js';
import { type AppError, ForbiddenError, SessionEndedError, UnauthorizedError } from '../../kernel/errors.js';
import type { Actor } from '../../kernel/principal.js';
import type { Role } from '../../kernel/roles.js';

/**
 * Re-checks, as the last statement of a write transaction, that a principal's credential still holds
 * (key not revoked or expired, session not ended, user not removed); resolves false when it does not.
 * It takes the credential's revocation locks shared (`dialect.holdShared`) before it reads, never a row
 * lock on the credential: a revocation waits only for writes between this check and their commit,
 * and every write that checks later sees it (ARCHITECTURE.md, "Revocation").
 */
export type PrincipalCheck<P extends Actor = Actor> = (trx: Db, principal: P) => Promise<boolean>;

/** Revocation lock names: a write holds its credentials' shared, a revocation one exclusive. */
export const keyLock = (keyId: string) => `key:${keyId}`;
export const userLock = (userId: string) => `user:${userId}`;
export const sessionLock = (sessionId: string) => `session:${sessionId}`;

/**
 * The answer when a principal's credential no longer holds: a key's caller hears 401 expired_token, a console
 * session's 401 unauthenticated, the same code its reads get once the session has ended (docs/console.md#sessions).
 */
export function credentialEnded(principal: Actor): AppError {
  return principal.kind === 'session' ? new SessionEndedError() : new UnauthorizedError('expired_token');
}

/** requireAdmin's answer (kernel/principal.ts), given at commit when the principal is no longer an admin. */
function notAdmin(): AppError {
  return new ForbiddenError('Only workspace admins can do this.');
}

/** One check per kind of principal, registered by the wiring (services.ts). */
export type PrincipalChecks = { [K in Actor['kind']]?: PrincipalCheck<Extract<Actor, { kind: K }>> };

declare const writeTxBrand: unique symbol;
/**
 * A transaction opened by the write runner for a named actor (`writeAs`), and nothing else: repository
 * functions that write take this, not a plain `Db`, so a write that skips the runner (and so the
 * principal's re-check) does not compile (test/types/write-tx.test-d.ts).
 */
export type WriteTx = Db & { readonly [writeTxBrand]: true };

/** Work that joins a write's transaction: the idempotency record of the request, for one. */
export interface WriteHooks<T> {
  /** Runs first in the transaction (claims the idempotency key inside it). */
  before?(trx: WriteTx): Promise<void>;
  /** Runs last with the result, before the commit (stores the response the client will get). */
  after?(trx: WriteTx, result: T): Promise<void>;
}

/**
 * Runs a change in a write transaction that re-checks the principal (or the system actor) last, just before the commit, so
 * a credential revoked before the transaction commits changes nothing: 401 (credentialEnded). Unless
 * `opts.changesKeys`, `fn` must not write API keys, sessions or users' role or removal: such
 * transactions leave this process's cache of verified keys valid (`Dialect.keysEpoch`).
 */
export function createWriteRunner(deps: {
  db: Db;
  dialect: Dialect;
  checks: PrincipalChecks;
  /**
   * The current role of a user who is still a member (undefined otherwise), read in `trx` after the principal's
   * check, which holds the user's revocation lock: a role change that commits first is seen, a later one waits.
   */
  roleOf?: (trx: Db, userId: string) => Promise<Role | undefined>;
  /**
   * Appends what the change recorded on its `AuditTrail` to the audit log (modules/audit), last in the
   * transaction. Absent: a change that records anything fails (no change without its entry).
   */
  audit?: (trx: WriteTx, actor: Actor, records: readonly AuditRecord[]) => Promise<string[]>;
  /**
   * After a commit that recorded entries: numbers them (modules/audit, the sequencer), before the change's
   * caller hears of it. A failure there leaves them pending for the next read of the log; the change stands.
   */
  sequence?: (workspaceIds: readonly string[]) => Promise<void>;
}) {
  return async function writeAs<T>(
    principal: Actor,
    fn: (trx: WriteTx, audit: AuditTrail) => Promise<T>,
    hooks?: WriteHooks<T>,
    /**
     * `changesKeys`: `fn` may write API keys or users (the CLI's commands): cached keys are re-verified after.
     * `adminOnly`: the user the principal acts for must still be an admin at commit (403 forbidden otherwise), so
     * an admin demoted while the change runs changes nothing; a system actor acting for no one passes.
     */
    opts?: { changesKeys?: boolean; adminOnly?: boolean; checkFirst?: boolean },
  ): Promise<T> {
    const check = deps.checks[principal.kind] as PrincipalCheck | undefined;
    // Fail closed: a kind nobody registered a check for cannot write.
    if (!check) throw new Error(`no principal check registered for kind "${principal.kind}"`);
    const recheck = async (trx: Db) => {
      if (!(await check(trx, principal))) throw credentialEnded(principal);
      if (opts?.adminOnly && principal.userId !== null) {
        if (!deps.roleOf) throw new Error('adminOnly needs the runner to read roles (roleOf)');
        if ((await deps.roleOf(trx, principal.userId)) !== 'admin') throw notAdmin();
      }
    };
    let recorded: string[] = [];
    const result = await deps.dialect
      .writeTransaction(
        deps.db,
        async (plain) => {
          // The one place a transaction becomes a WriteTx: the principal is re-checked in it below.
          const trx = plain as WriteTx;
          // First only when the change ends or narrows the principal's own credential (an admin's own role or
          // removal): the check would see the change itself. Its locks are then held for the whole transaction.
          if (opts?.checkFirst) await recheck(trx);
          await hooks?.before?.(trx);
          const records: AuditRecord[] = [];
          const result = await fn(trx, { record: (entry) => void records.push(entry) });
          await hooks?.after?.(trx, result);
          // Last, so the revocation locks are held for one round trip only (see PrincipalCheck).
          if (!opts?.checkFirst) await recheck(trx);
          // After the check: the change's entries, unnumbered (the sequencer numbers them after the commit).
          if (records.length > 0) {
            if (!deps.audit) throw new Error('the write runner has no audit log to append to');
            recorded = await deps.audit(trx, principal, records);
          }
          return result;
        },
        { keepsKeys: !opts?.changesKeys },
      )
      .catch((err: unknown) => {
        // A check sent with the commit (PostgreSQL, `later`) raises instead of answering false.
        throw isCredentialEnded(err) ? credentialEnded(principal) : err;
      });
    if (recorded.length > 0 && deps.sequence) await deps.sequence(recorded).catch(() => {});
    return result;
  };
}
export type WriteRunner = ReturnType<typeof createWriteRunner>;
