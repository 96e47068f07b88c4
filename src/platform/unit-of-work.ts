import { type Db, type Dialect, isCredentialEnded } from '../db/dialect.js';
import type { AuditRecord, AuditTrail } from '../kernel/audit-actions.js';
import { type AppError, ForbiddenError, SessionEndedError, UnauthorizedError } from '../kernel/errors.js';
import type { Actor } from '../kernel/principal.js';
import type { Role } from '../kernel/roles.js';
import type { DomainEvent, DomainEventOf, DomainEventType } from './domain-events.js';

/**
 * Re-checks, as the last statement of a write transaction, that an actor's credential still holds
 * (key not revoked or expired, session not ended, user not removed); resolves false when it does not.
 * It takes the credential's revocation locks shared (`dialect.holdShared`) before it reads, never a row
 * lock on the credential: a revocation waits only for writes between this check and their commit,
 * and every write that checks later sees it (ARCHITECTURE.md, "Revocation").
 */
export type PrincipalCheck<P extends Actor = Actor> = (trx: Db, principal: P) => Promise<boolean>;

/** One check per kind of actor, registered by the wiring (services.ts). */
export type PrincipalChecks = { [K in Actor['kind']]?: PrincipalCheck<Extract<Actor, { kind: K }>> };

/** Revocation lock names: a write holds its credentials' shared, a revocation one exclusive. */
export const keyLock = (keyId: string) => `key:${keyId}`;
export const userLock = (userId: string) => `user:${userId}`;
export const sessionLock = (sessionId: string) => `session:${sessionId}`;

/**
 * The answer when an actor's credential no longer holds: a key's caller hears 401 expired_token, a console
 * session's 401 unauthenticated, the same code its reads get once the session has ended (docs/console.md#sessions).
 */
export function credentialEnded(actor: Actor): AppError {
  return actor.kind === 'session' ? new SessionEndedError() : new UnauthorizedError('expired_token');
}

declare const writeTxBrand: unique symbol;
/**
 * A transaction opened by the unit of work for a named actor, and nothing else: repository functions that
 * write take this, not a plain `Db`, so a write that skips the unit of work (and so the actor's re-check)
 * does not compile (test/types/write-tx.test-d.ts).
 */
export type WriteTx = Db & { readonly [writeTxBrand]: true };

/** Work that joins a change's transaction from outside it: the idempotency record of an HTTP request. */
export interface WriteHooks<T> {
  /** Runs first in the transaction (claims the idempotency key inside it). */
  before?(trx: WriteTx): Promise<void>;
  /** Runs last with the result, before the actor's check (stores the response the client will get). */
  after?(trx: WriteTx, result: T): Promise<void>;
}

/** What a change declares about itself; a function joining a change declares the same. */
export interface ChangeOptions {
  /**
   * The change may write API keys, sessions, or users' role or removal: this process's (and, with Redis, every
   * process's) cache of verified keys is re-verified after it (`Dialect.keysEpoch`). Must be declared by the
   * change that begins the transaction: a function joining a change that did not declare it throws.
   */
  changesKeys?: boolean;
  /** The user the actor acts for must still be an admin at commit (403 otherwise); a system actor passes. */
  adminOnly?: boolean;
  /**
   * The actor is checked before the change instead of last: for a change that ends or narrows the actor's own
   * credential (an admin's own role or removal, a key revoking itself), which the check after would see.
   */
  checkFirst?: boolean;
}

/**
 * The door to a change: an actor, and `run`, which runs a function as one change of that actor. Every service
 * function that changes data takes one. A request, a console session, the CLI, the worker, a job or a test
 * makes one with `UnitOfWork.as(actor)`; a change in progress hands its own (`Change.unit`) to the functions
 * it calls, whose `run` then joins it. So whoever opened the door decides where the transaction begins and
 * ends, and the function's code is the same either way.
 */
export interface Unit<A extends Actor = Actor> {
  readonly actor: A;
  /**
   * Runs `fn` as a change: in a new write transaction as `actor` (each call its own), or, for a change's own
   * unit, in that change. Resolves after the commit and its after-commit work.
   */
  run<T>(fn: (c: Change<A>) => Promise<T>, opts?: ChangeOptions): Promise<T>;
  /** The same door for another actor (a sign-in that ends in a person's session); refused inside a change. */
  as<B extends Actor>(actor: B): Unit<B>;
}

/**
 * One change in progress: its transaction, its actor, what it emits, its audit trail and its after-commit
 * work. Subscribers (domain-events.ts) react to what it emits in the same transaction.
 */
export interface Change<A extends Actor = Actor> {
  readonly trx: WriteTx;
  readonly actor: A;
  /** 1; 2 when the change runs again after a conflict a subscriber answered (`Subscriber.retrying`). */
  readonly attempt: number;
  /** Tells the subscribers what happened, in this transaction; a subscriber that throws fails the change. */
  emit(event: DomainEvent): Promise<void>;
  /** What the change did, appended to the audit log last in its transaction (modules/audit). */
  readonly audit: AuditTrail;
  /**
   * Work for after the commit (never after a rollback), awaited before the change's caller resumes; it gets the
   * unit of work to write with. A failure is logged by the wiring's `log`, and the change stands.
   */
  afterCommit(fn: (uow: UnitOfWork) => unknown): void;
  /** This change as a unit: a function given it runs in this change (`run` joins it). */
  readonly unit: Unit<A>;
}

/** The unit of work as its users see it: doors for actors (`createUnitOfWork`). */
export interface UnitOfWork {
  /** The door for `actor`; `hooks` (an HTTP request's idempotency record) join the change it begins. */
  as<A extends Actor>(actor: A, hooks?: WriteHooks<unknown>): Unit<A>;
}

/**
 * The unit of work: the one door to a write. It opens the transaction (`dialect.writeTransaction`), runs the
 * change with its context, dispatches what it emits to the subscribers the wiring registered (in their
 * order), runs the idempotency hooks, checks the actor last (the check registered for its kind), lets the
 * subscribers close the change after the check (the audit log's entries), commits, then runs the
 * after-commit work. A change a subscriber refuses with a conflict it knows (`retrying`) runs once more.
 */
export function createUnitOfWork(deps: {
  db: Db;
  dialect: Dialect;
  checks: PrincipalChecks;
  /**
   * The current role of a user who is still a member (undefined otherwise), read in `trx` after the actor's
   * check, which holds the user's revocation lock: a role change that commits first is seen, a later one waits.
   */
  roleOf: (trx: Db, userId: string) => Promise<Role | undefined>;
  subscribers: readonly Subscriber[];
  /** Where a failed after-commit step is told (the change stands). */
  onAfterCommitError?: (err: unknown) => void;
}): UnitOfWork {
  const handlers = new Map<string, ((c: Change, e: DomainEvent) => Promise<void>)[]>();
  for (const s of deps.subscribers) {
    for (const [type, handler] of Object.entries(s.on ?? {})) {
      if (!handler) continue;
      const list = handlers.get(type) ?? [];
      list.push(handler as (c: Change, e: DomainEvent) => Promise<void>);
      handlers.set(type, list);
    }
  }
  const closers = deps.subscribers.filter((s) => s.closing);
  const retriers = deps.subscribers.filter((s) => s.retrying);

  const uow: UnitOfWork = {
    as<A extends Actor>(actor: A, hooks?: WriteHooks<unknown>): Unit<A> {
      return {
        actor,
        run: (fn, opts) => begin(actor, fn, opts ?? {}, hooks),
        as: (other) => uow.as(other),
      };
    },
  };

  async function begin<A extends Actor, T>(
    actor: A,
    fn: (c: Change<A>) => Promise<T>,
    opts: ChangeOptions,
    hooks: WriteHooks<unknown> | undefined,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await once(actor, fn, opts, hooks as WriteHooks<T> | undefined, attempt);
      } catch (err) {
        const again = attempt === 1 && retriers.some((s) => s.retrying?.(actor, err) === true);
        if (!again) throw err;
      }
    }
  }

  async function once<A extends Actor, T>(
    actor: A,
    fn: (c: Change<A>) => Promise<T>,
    opts: ChangeOptions,
    hooks: WriteHooks<T> | undefined,
    attempt: number,
  ): Promise<T> {
    const check = deps.checks[actor.kind] as PrincipalCheck | undefined;
    // Fail closed: a kind nobody registered a check for cannot write.
    if (!check) throw new Error(`no principal check registered for kind "${actor.kind}"`);
    const flags = { adminOnly: opts.adminOnly === true, checked: false };
    const recheck = async (trx: Db) => {
      if (!(await check(trx, actor))) throw credentialEnded(actor);
      if (flags.adminOnly && actor.userId !== null) {
        if ((await deps.roleOf(trx, actor.userId)) !== 'admin')
          throw new ForbiddenError('Only workspace admins can do this.');
      }
    };
    const after: ((uow: UnitOfWork) => unknown)[] = [];
    const began = performance.now();
    const result = await deps.dialect
      .writeTransaction(
        deps.db,
        async (plain) => {
          // The one place a transaction becomes a WriteTx: the actor is re-checked in it below.
          const trx = plain as WriteTx;
          const records: AuditRecord[] = [];
          const change: Change<A> = {
            trx,
            actor,
            attempt,
            audit: { record: (entry) => void records.push(entry) },
            async emit(event) {
              for (const h of handlers.get(event.type) ?? []) await h(change as Change, event);
            },
            afterCommit: (work) => void after.push(work),
            unit: {
              actor,
              run: async (inner, innerOpts) => {
                if (innerOpts?.changesKeys && !opts.changesKeys) {
                  throw new Error('a change that writes keys or users must declare changesKeys where it begins');
                }
                if (innerOpts?.adminOnly) flags.adminOnly = true;
                if (innerOpts?.checkFirst && !flags.checked) {
                  await recheck(trx);
                  flags.checked = true;
                }
                return inner(change);
              },
              as: () => {
                throw new Error('a change cannot open another one: pass its unit on instead');
              },
            },
          };
          // First only when the change ends or narrows the actor's own credential: the check after would see the
          // change itself. Its locks are then held for the whole transaction.
          if (opts.checkFirst) {
            await recheck(trx);
            flags.checked = true;
          }
          await hooks?.before?.(trx);
          const value = await fn(change);
          await hooks?.after?.(trx, value);
          // Last, so the revocation locks are held for one round trip only (see PrincipalCheck).
          if (!flags.checked) await recheck(trx);
          // After the check: what closes the change (the audit log appends its entries).
          for (const s of closers) await s.closing?.(change as Change, records);
          return value;
        },
        { keepsKeys: !opts.changesKeys },
      )
      .catch((err: unknown) => {
        // A check sent with the commit (PostgreSQL, `later`) raises instead of answering false.
        throw isCredentialEnded(err) ? credentialEnded(actor) : err;
      });
    // A job's change leaves the write lock free as long as the change took (Dialect.yieldToOtherWriters): a job
    // that writes many changes in a row (billing-invoices catching up) lets other processes' writes in between.
    if (actor.kind === 'system' && actor.name.startsWith('scheduler:')) {
      await deps.dialect.yieldToOtherWriters?.(performance.now() - began);
    }
    for (const work of after) {
      try {
        await work(uow);
      } catch (err) {
        deps.onAfterCommitError?.(err);
      }
    }
    return result;
  }

  return uow;
}

/** A subscriber's reactions, by the type of what a change emits. */
export type Handlers = { [T in DomainEventType]?: (c: Change, event: DomainEventOf<T>) => Promise<void> };

/** Something that reacts to changes, registered once by the wiring (src/services.ts), in order. */
export interface Subscriber {
  /** For a reader of the wiring and for errors. */
  name: string;
  on?: Handlers;
  /**
   * Last in the change's transaction, after the actor's check, with what the change recorded on its audit
   * trail: the audit log's subscriber appends the entries there.
   */
  closing?(c: Change, recorded: readonly AuditRecord[]): Promise<void>;
  /**
   * A change failed with `err`: true when it is a conflict this subscriber caused and has now cleared (the
   * outbox's receivers moved under it), so the change runs once more; `Change.attempt` is then 2.
   */
  retrying?(actor: Actor, err: unknown): boolean;
}
