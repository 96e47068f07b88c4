import type { Db } from '../../db/dialect.js';
import type { ConsoleSessionsTable, Env } from '../../db/types.js';
import type { AuditTrail } from '../../kernel/audit-actions.js';
import { isoAt } from '../../kernel/clock.js';
import { AppError, NotFoundError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import { personActor, type SessionPrincipal } from '../../kernel/principal.js';
import { expireInBatches } from '../../platform/batched-purge.js';
import { sessionLock, type Unit, type WriteTx } from '../../platform/unit-of-work.js';
import { consoleAuthRepository as repo } from './console-auth.repository.js';
import { type ConsoleAuthDeps, normalizeEmail } from './console-auth-deps.js';
import { createPasswordLinks } from './password-links.js';
import { dummyHash, verifyPassword } from './passwords.js';
import { recordForPerson } from './person-audit.js';
import {
  type Client,
  clientActor,
  createSignInSteps,
  type OpenSession,
  personActorOf,
  type SecondFactorNeeded,
  type SessionKind,
  type SignInGate,
  ssoRequired,
} from './sign-in-steps.js';
import { csrfTokenFor, isTokenShaped, newToken, tokenDigest } from './tokens.js';

export type { ConsoleAuthDeps } from './console-auth-deps.js';
export type { Client, OpenSession, SecondFactorNeeded, SessionKind, SignInGate };

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
/** Default session lifetimes (docs/console.md#sessions): ASVS 4.0.3 level 2, 30 minutes idle and 12 hours in all. */
export const DEFAULT_SESSIONS = { idleMin: 30, maxH: 12 } as const;
const THROTTLE_WINDOW_MS = 15 * MINUTE;
/** Failed sign-ins allowed in a window: per account from one address, per account from anywhere, per address. */
const MAX_FAILURES_PER_EMAIL_AND_IP = 5;
const MAX_FAILURES_PER_EMAIL = 100;
const MAX_FAILURES_PER_IP = 50;
/** last_seen_at is written at most once a minute per session. */
const TOUCH_EVERY_MS = MINUTE;

/**
 * Console sign-in (docs/console.md, docs/sign-in.md): sessions and the sign-in throttle here, the steps
 * after a password in sign-in-steps.ts, passwords and single-use links in password-links.ts; one service
 * to the rest of the code.
 */
export function createConsoleAuthService(deps: ConsoleAuthDeps) {
  const { db, dialect, clock, uow } = deps;
  const idleMs = (deps.sessions ?? DEFAULT_SESSIONS).idleMin * MINUTE;
  const absoluteMs = (deps.sessions ?? DEFAULT_SESSIONS).maxH * HOUR;
  // The steps after a password (sign-in-steps.ts); they open sessions and count failures through this service.
  const steps = createSignInSteps({
    db,
    dialect,
    clock,
    uow,
    gate: deps.gate,
    openSession,
    throttle,
    recordFailure,
  });
  const { afterPassword, nextStep, startPending } = steps;

  /** Ends sessions of a person under their exclusive locks, so no write of theirs is still in flight. */
  async function endSessionsLocked(trx: WriteTx, email: string, at: string, only?: { id?: string; except?: string }) {
    const open = await repo.listSessions(trx, email, at);
    for (const s of open) {
      if ((only?.id && s.id !== only.id) || s.id === only?.except) continue;
      await dialect.holdExclusive(trx, sessionLock(s.id));
    }
    return repo.endSessions(trx, email, at, only);
  }

  /** What each failed sign-in counts against (docs/console.md#sign-in-throttling). */
  const subjects = (email: string, ip: string) => ({
    emailAndIp: `email_ip:${ip}|${email}`,
    email: `email:${email}`,
    ip: `ip:${ip}`,
  });

  /**
   * docs/console.md: 5 failures for an account from one address, 100 for an account from all addresses,
   * 50 from one address, in 15 minutes; then 429 until the window moves on. One client can thus lock
   * only itself out, of one account or of all: never everyone else.
   */
  async function throttle(email: string | null, ip: string): Promise<void> {
    const since = isoAt(clock.now() - THROTTLE_WINDOW_MS);
    const s = subjects(email ?? '', ip);
    // Without an email (a passkey sign-in) only the address counts.
    const [byEmailAndIp, byEmail, byIp] = await Promise.all([
      email === null ? 0 : repo.countFailures(db, s.emailAndIp, since),
      email === null ? 0 : repo.countFailures(db, s.email, since),
      repo.countFailures(db, s.ip, since),
    ]);
    if (
      byEmailAndIp >= MAX_FAILURES_PER_EMAIL_AND_IP ||
      byEmail >= MAX_FAILURES_PER_EMAIL ||
      byIp >= MAX_FAILURES_PER_IP
    ) {
      throw new AppError(
        429,
        'rate_limited',
        'Too many failed sign-ins; wait 15 minutes or reset your password.',
        undefined,
        { 'retry-after': String(THROTTLE_WINDOW_MS / 1000) },
      );
    }
  }

  /**
   * Signs a person in. Unknown emails take the same time and get the same 401 as a wrong password.
   * Throws 401 invalid_credentials, 429 rate_limited.
   */
  async function signIn(
    input: { email: string; password: string } & Client,
  ): Promise<(OpenSession & { token: string }) | { secondFactor: SecondFactorNeeded }> {
    const email = normalizeEmail(input.email);
    const client: Client = { ip: input.ip, userAgent: input.userAgent, origin: input.origin };
    await throttle(email, input.ip);
    const credential = await repo.findCredential(db, email);
    const ok = await verifyPassword(input.password, credential?.password_hash ?? (await dummyHash(deps.passwordCost)));
    const memberships = ok && credential ? await repo.memberships(db, email) : [];
    if (!ok || !credential || memberships.length === 0) {
      await recordFailure(email, client, 'password');
      throw new AppError(401, 'invalid_credentials', 'The email or password is incorrect.');
    }
    return afterPassword(email, memberships, client);
  }

  /**
   * Records a failed sign-in (a wrong password or second factor) against each throttle subject, and in the audit log
   * of each workspace where the email names a member, as that member (`session.sign_in_failed`; an email nobody has
   * records nothing there).
   */
  async function recordFailure(email: string, client: Client, step: 'password' | 'second_factor'): Promise<void> {
    const at = isoAt(clock.now());
    await uow.as(clientActor('sign-in', client)).run(async ({ trx, audit }) => {
      for (const subject of Object.values(subjects(email, client.ip))) {
        await repo.insertFailure(trx, newId('request'), subject, at);
      }
      await recordForPerson(trx, audit, email, {
        action: 'session.sign_in_failed',
        changes: { failed_step: { before: null, after: step } },
      });
    });
  }

  /**
   * Opens a session (a sign-in step passed) in `u`'s change: a fresh token, stored as a digest; `session.signed_in`
   * in the audit log of each workspace the session reaches.
   */
  async function openSession(
    u: Unit,
    email: string,
    client: Client,
    kind: SessionKind,
  ): Promise<OpenSession & { token: string }> {
    const opened = newSession(email, clock.now(), client, kind);
    await u.run(async ({ trx, audit }) => {
      await repo.insertSession(trx, opened.session);
      await recordSignIn(trx, audit, opened.session);
    });
    return opened;
  }

  /** `session.signed_in`, on the session, in each workspace it reaches (a single sign-on session: its own). */
  function recordSignIn(trx: Db, audit: AuditTrail, session: ConsoleSessionsTable) {
    return recordForPerson(trx, audit, session.email, {
      action: 'session.signed_in',
      target: { type: 'session', id: session.id },
      changes: { method: { before: null, after: session.method }, stage: { before: null, after: session.stage } },
      only: session.workspace_id,
    });
  }

  /** `session.signed_out`, on the session, in each workspace it reached. */
  function recordSignOut(
    trx: Db,
    audit: AuditTrail,
    session: Pick<ConsoleSessionsTable, 'id' | 'email' | 'workspace_id'>,
  ) {
    return recordForPerson(trx, audit, session.email, {
      action: 'session.signed_out',
      target: { type: 'session', id: session.id },
      only: session.workspace_id,
    });
  }

  /** A new session's row (to insert) and its secret token: 256 random bits, stored as a digest. */
  function newSession(
    email: string,
    now: number,
    client: Client,
    kind: SessionKind = { method: 'password' },
  ): OpenSession & { token: string } {
    const token = newToken();
    const session: ConsoleSessionsTable = {
      id: newId('session', now),
      token_digest: tokenDigest(token),
      email,
      created_at: isoAt(now),
      last_seen_at: isoAt(now),
      expires_at: isoAt(now + absoluteMs),
      ended_at: null,
      user_agent: client.userAgent?.slice(0, 200) ?? null,
      ip: client.ip,
      method: kind.method,
      stage: kind.stage ?? 'full',
      workspace_id: kind.workspaceId ?? null,
    };
    return { token, session, csrfToken: csrfTokenFor(token) };
  }

  /** The open session of a cookie token, or undefined (unknown, ended, idle, or past its absolute lifetime). */
  async function sessionOf(token: string | undefined): Promise<OpenSession | undefined> {
    if (!isTokenShaped(token)) return undefined;
    const session = await repo.findSessionByDigest(db, tokenDigest(token));
    if (!session || session.ended_at !== null) return undefined;
    const now = clock.now();
    if (Date.parse(session.expires_at) <= now || Date.parse(session.last_seen_at) + idleMs <= now) {
      return undefined;
    }
    if (now - Date.parse(session.last_seen_at) >= TOUCH_EVERY_MS) {
      const at = isoAt(now);
      await uow.as(personActor(session.email)).run(({ trx }) => repo.touchSession(trx, session.id, at));
      session.last_seen_at = at;
    }
    return { session, csrfToken: csrfTokenFor(token) };
  }

  /** The principal of a session in one workspace and environment; NotFoundError when not a member. */
  async function principalFor(session: ConsoleSessionsTable, workspaceId: string, env: Env): Promise<SessionPrincipal> {
    if (session.workspace_id && session.workspace_id !== workspaceId) throw new NotFoundError('workspace');
    const m = await repo.membership(db, session.email, workspaceId);
    if (!m) throw new NotFoundError('workspace');
    if (
      session.method !== 'sso' &&
      (await deps.gate?.ssoOnly([{ workspace_id: workspaceId, user_id: m.id }]))?.length
    ) {
      throw ssoRequired();
    }
    return { kind: 'session', sessionId: session.id, userId: m.id, workspaceId, env, role: m.role, scopes: null };
  }

  async function signOut(session: ConsoleSessionsTable, client?: Client): Promise<void> {
    const at = isoAt(clock.now());
    await uow.as(personActorOf(session.email, client)).run(async ({ trx, audit }) => {
      await dialect.holdExclusive(trx, sessionLock(session.id));
      if ((await repo.endSessions(trx, session.email, at, { id: session.id })) > 0) {
        await recordSignOut(trx, audit, session);
      }
    });
  }

  // Passwords and single-use links (password-links.ts): they end sessions and open one, after the
  // second factor when the person has one.
  const links = createPasswordLinks(deps, { endSessionsLocked, newSession, nextStep, startPending, recordSignIn });

  return {
    ...links,
    signIn,
    openSession,
    completeSecondFactor: steps.completeSecondFactor,
    pendingEmail: steps.pendingEmail,
    openPasskeySession: steps.openPasskeySession,
    passkeyFailed: steps.passkeyFailed,
    finishEnrolment: steps.finishEnrolment,
    sessionMemberships: steps.sessionMemberships,
    throttle,
    recordFailure,
    sessionOf,
    principalFor,
    signOut,
    ...createSignInReads(deps),
    pendingInvites: (workspaceId: string) => repo.pendingInvites(db, workspaceId, isoAt(clock.now())),
    sessions: (email: string) => repo.listSessions(db, email, isoAt(clock.now())),
    /** Ends one of a person's sessions (the sessions list): `session.signed_out` on it. */
    async endSession(email: string, id: string, client?: Client) {
      const at = isoAt(clock.now());
      await uow.as(personActorOf(email, client)).run(async ({ trx, audit }) => {
        if ((await endSessionsLocked(trx, email, at, { id })) === 0) throw new NotFoundError('session');
        const row = await repo.findSessionOf(trx, email, id);
        if (row) await recordSignOut(trx, audit, row);
      });
    },
    /** The purge-sign-in-steps job's part, written with its unit. */
    /** Sign-in failures past the throttle's window and pending sign-ins expired as long, in bounded batches. */
    purgeFailures: async (u: Unit) => {
      const before = isoAt(clock.now() - THROTTLE_WINDOW_MS);
      return (
        (await expireInBatches(u, (trx, limit) => repo.purgeFailures(trx, before, limit))) +
        (await expireInBatches(u, (trx, limit) => repo.purgePendingSignIns(trx, before, limit)))
      );
    },
  };
}
export type ConsoleAuthService = ReturnType<typeof createConsoleAuthService>;

/**
 * What second factors and single sign-on read of a person's sign-in (their memberships, their password), built
 * before them and before the console-auth service, which asks them in turn (its `gate`).
 */
export function createSignInReads(deps: { db: Db; passwordCost?: number }) {
  const { db } = deps;
  return {
    /** The workspaces a person (an email) is a member of, oldest first. */
    memberships: (email: string) => repo.memberships(db, normalizeEmail(email)),
    /** The same, in the caller's transaction (SQLite has one connection: a read beside an open write waits forever). */
    membershipsIn: (trx: Db, email: string) => repo.memberships(trx, normalizeEmail(email)),
    /** The current member of a workspace with this email, in the caller's transaction. */
    memberIn: (trx: Db, email: string, workspaceId: string) => repo.membership(trx, normalizeEmail(email), workspaceId),
    /** Whether `password` is the console password of `email` (re-authentication before a change of factors). */
    async checkPassword(email: string, password: string): Promise<boolean> {
      const credential = await repo.findCredential(db, normalizeEmail(email));
      return verifyPassword(password, credential?.password_hash ?? (await dummyHash(deps.passwordCost))).then(
        (ok) => ok && !!credential,
      );
    },
  };
}
export type SignInReads = ReturnType<typeof createSignInReads>;
