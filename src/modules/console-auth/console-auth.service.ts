import type { Db, Dialect } from '../../db/dialect.js';
import type { ConsoleLinkPurpose, ConsoleSessionsTable, Env, Role } from '../../db/types.js';
import { type Clock, isoAt } from '../../lib/clock.js';
import { AppError, fieldError, NotFoundError } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { SessionPrincipal } from '../../lib/principal.js';
import { sessionLock } from '../auth/write-runner.js';
import type { NotificationsService } from '../notifications/notifications.service.js';
import type { User } from '../users/users.schemas.js';
import type { UsersService } from '../users/users.service.js';
import { consoleAuthRepository as repo } from './console-auth.repository.js';
import { weakPasswordProblem } from './password-strength.js';
import { dummyHash, hashPassword, passwordProblem, verifyPassword } from './passwords.js';
import {
  createSignInSteps,
  type OpenSession,
  type SecondFactorMethod,
  type SecondFactorNeeded,
  type SessionKind,
  type SignInGate,
  ssoRequired,
} from './sign-in-steps.js';
import { csrfTokenFor, isTokenShaped, newToken, tokenDigest } from './tokens.js';

export type { OpenSession, SecondFactorMethod, SecondFactorNeeded, SessionKind, SignInGate };

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Default session lifetimes (docs/console.md#sessions): ASVS 4.0.3 level 2, 30 minutes idle and 12 hours in all. */
export const DEFAULT_SESSIONS = { idleMin: 30, maxH: 12 } as const;
/** Link lifetimes (docs/console.md#passwords-and-links): invites and first passwords 7 days, password resets 1 hour. */
const LINK_TTL_MS: Record<ConsoleLinkPurpose, number> = { set_password: 7 * DAY, invite: 7 * DAY, reset: HOUR };
const THROTTLE_WINDOW_MS = 15 * MINUTE;
/** Failed sign-ins allowed in a window: per account from one address, per account from anywhere, per address. */
const MAX_FAILURES_PER_EMAIL_AND_IP = 5;
const MAX_FAILURES_PER_EMAIL = 100;
const MAX_FAILURES_PER_IP = 50;
/** last_seen_at is written at most once a minute per session. */
const TOUCH_EVERY_MS = MINUTE;

const normalizeEmail = (email: string) => email.trim().toLowerCase();

const badLink = () =>
  new AppError(400, 'invalid_link', 'This link is invalid, expired or already used; ask for a new one.');

/** Console sign-in (docs/console.md): passwords per email, sessions, single-use links, the sign-in throttle. */
export function createConsoleAuthService(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  users: UsersService;
  /** Base URL of every link (PUBLIC_URL). */
  publicUrl: () => string;
  /**
   * The notification outbox (docs/notifications.md): invite and reset emails and "password changed",
   * written in the transaction of the link or the change. Without it "forgot password" makes no link.
   */
  notifications?: Pick<NotificationsService, 'linkNotice' | 'securityNotice'>;
  /** Minutes without a request and hours in all after which a session ends (default DEFAULT_SESSIONS). */
  sessions?: { idleMin: number; maxH: number };
  /** Second factors, the second-factor policy and single sign-on (services.ts); absent: a password alone. */
  gate?: () => SignInGate;
}) {
  const { db, dialect, clock } = deps;
  const idleMs = (deps.sessions ?? DEFAULT_SESSIONS).idleMin * MINUTE;
  const absoluteMs = (deps.sessions ?? DEFAULT_SESSIONS).maxH * HOUR;
  // The steps after a password (sign-in-steps.ts); they open sessions and count failures through this service.
  const steps = createSignInSteps({ db, dialect, clock, gate: deps.gate, openSession, throttle, recordFailure });
  const { afterPassword, nextStep, startPending } = steps;

  /** Ends sessions of a person under their exclusive locks, so no write of theirs is still in flight. */
  async function endSessionsLocked(trx: Db, email: string, at: string, only?: { id?: string; except?: string }) {
    const open = await repo.listSessions(trx, email, at);
    for (const s of open) {
      if ((only?.id && s.id !== only.id) || s.id === only?.except) continue;
      await dialect.holdExclusive(trx, sessionLock(s.id));
    }
    return repo.endSessions(trx, email, at, only);
  }

  /** Makes a single-use link; the token is in the URL and nowhere else. */
  async function makeLink(
    purpose: ConsoleLinkPurpose,
    email: string,
    scope: { workspaceId?: string; userId?: string } = {},
    trx: Db = db,
  ): Promise<{ url: string; expires_at: string }> {
    const token = newToken();
    const now = clock.now();
    const expires_at = isoAt(now + LINK_TTL_MS[purpose]);
    await repo.insertLink(trx, {
      digest: tokenDigest(token),
      purpose,
      email: normalizeEmail(email),
      workspace_id: scope.workspaceId ?? null,
      user_id: scope.userId ?? null,
      created_at: isoAt(now),
      expires_at,
      used_at: null,
    });
    return { url: `${deps.publicUrl()}/console/set-password?token=${token}`, expires_at };
  }

  /** Tells a person their password changed (docs/notifications.md: once, in their oldest workspace), in `trx`. */
  async function passwordChanged(trx: Db, email: string, at: string): Promise<void> {
    const [first] = await repo.memberships(trx, email);
    if (!first || !deps.notifications) return;
    await deps.notifications.securityNotice(trx, {
      type: 'password.changed',
      workspaceId: first.workspace_id,
      users: [first.user_id],
      admins: false,
      data: { at },
    });
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
  async function signIn(input: {
    email: string;
    password: string;
    ip: string;
    userAgent?: string;
  }): Promise<(OpenSession & { token: string }) | { secondFactor: SecondFactorNeeded }> {
    const email = normalizeEmail(input.email);
    await throttle(email, input.ip);
    const credential = await repo.findCredential(db, email);
    const ok = await verifyPassword(input.password, credential?.password_hash ?? (await dummyHash()));
    const memberships = ok && credential ? await repo.memberships(db, email) : [];
    if (!ok || !credential || memberships.length === 0) {
      await recordFailure(email, input.ip);
      throw new AppError(401, 'invalid_credentials', 'The email or password is incorrect.');
    }
    return afterPassword(email, memberships, input);
  }

  /** Records a failed sign-in (a wrong password, second factor or passkey) against each throttle subject. */
  async function recordFailure(email: string, ip: string): Promise<void> {
    const at = isoAt(clock.now());
    await dialect.writeTransaction(
      db,
      async (trx) => {
        for (const subject of Object.values(subjects(email, ip))) {
          await repo.insertFailure(trx, newId('request'), subject, at);
        }
      },
      { keepsKeys: true },
    );
  }

  /** Opens a session (a sign-in step passed): a fresh token, stored as a digest. */
  async function openSession(
    email: string,
    client: { ip: string; userAgent?: string },
    kind: SessionKind,
    inTrx?: Db,
  ): Promise<OpenSession & { token: string }> {
    const opened = newSession(email, clock.now(), client, kind);
    if (inTrx) await repo.insertSession(inTrx, opened.session);
    else await dialect.writeTransaction(db, (trx) => repo.insertSession(trx, opened.session), { keepsKeys: true });
    return opened;
  }

  /** A new session's row (to insert) and its secret token: 256 random bits, stored as a digest. */
  function newSession(
    email: string,
    now: number,
    client: { ip: string; userAgent?: string },
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
      await dialect.writeTransaction(db, (trx) => repo.touchSession(trx, session.id, at), { keepsKeys: true });
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
      (await deps.gate?.().ssoOnly([{ workspace_id: workspaceId, user_id: m.id }]))?.length
    ) {
      throw ssoRequired();
    }
    return { kind: 'session', sessionId: session.id, userId: m.id, workspaceId, env, role: m.role, scopes: null };
  }

  async function signOut(session: ConsoleSessionsTable): Promise<void> {
    const at = isoAt(clock.now());
    await dialect.writeTransaction(
      db,
      async (trx) => {
        await dialect.holdExclusive(trx, sessionLock(session.id));
        await repo.endSessions(trx, session.email, at, { id: session.id });
      },
      { keepsKeys: true },
    );
  }

  /** Sets the password from a single-use link; ends every session of that person. Throws 400 invalid_link, 400 on a weak password. */
  async function redeemLink(
    token: string,
    password: string,
    client: { ip: string; userAgent?: string },
  ): Promise<(OpenSession & { token: string }) | { secondFactor: SecondFactorNeeded }> {
    const problem = passwordProblem(password);
    if (problem) throw fieldError('password', 'invalid_length', problem);
    if (!isTokenShaped(token)) throw badLink();
    const digest = tokenDigest(token);
    // The link first: the strength check costs CPU, so only a live link's holder can ask for it.
    const found = await repo.findLink(db, digest);
    if (!found || found.used_at !== null || Date.parse(found.expires_at) <= clock.now()) throw badLink();
    const weak = weakPasswordProblem(password, [found.email]);
    if (weak) throw fieldError('password', 'too_common', weak);
    const hash = await hashPassword(password);
    // A link proves the email, not the second factor: a person who has one gives it next (docs/sign-in.md).
    // Where single sign-on is required, the new session simply does not reach that workspace (sessionMemberships).
    const next = await nextStep(found.email, await repo.memberships(db, found.email)).catch((e: unknown) => {
      if (e instanceof AppError && e.code === 'sso_required')
        return { methods: [] as SecondFactorMethod[], stage: 'full' as const };
      throw e;
    });
    return dialect.writeTransaction(
      db,
      async (trx): Promise<(OpenSession & { token: string }) | { secondFactor: SecondFactorNeeded }> => {
        const link = await repo.findLink(trx, digest);
        const now = clock.now();
        if (!link || link.used_at !== null || Date.parse(link.expires_at) <= now) throw badLink();
        if (link.workspace_id && !(await repo.membership(trx, link.email, link.workspace_id))) throw badLink();
        // A link of someone who is no longer a member anywhere (a reset link outliving its person) signs no one in.
        if ((await repo.memberships(trx, link.email)).length === 0) throw badLink();
        if (!(await repo.useLink(trx, digest, isoAt(now)))) throw badLink();
        await repo.upsertCredential(trx, link.email, hash, isoAt(now));
        await endSessionsLocked(trx, link.email, isoAt(now));
        // A reset replaces a password; a first password (invite, set_password) replaces none.
        if (link.purpose === 'reset') await passwordChanged(trx, link.email, isoAt(now));
        if (next.methods.length > 0)
          return { secondFactor: await startPending(trx, link.email, client.ip, next.methods) };
        // Setting the password signs the person in (docs/console.md#passwords-and-links): a fresh
        // session, as sign-in makes, in the same transaction that ended every earlier one.
        const opened = newSession(link.email, now, client, { method: 'password', stage: next.stage });
        await repo.insertSession(trx, opened.session);
        return opened;
      },
      { keepsKeys: true },
    );
  }

  /** Whom a live single-use link is for (the set-password page names the account); throws 400 invalid_link. */
  async function describeLink(token: string): Promise<{ email: string; expires_at: string }> {
    if (!isTokenShaped(token)) throw badLink();
    const found = await repo.findLink(db, tokenDigest(token));
    if (!found || found.used_at !== null || Date.parse(found.expires_at) <= clock.now()) throw badLink();
    return { email: found.email, expires_at: found.expires_at };
  }

  /** A reset link valid 1 hour for a member's email (`wsvc users reset-link`, in the CLI's transaction when given one); undefined when no one has it. */
  async function resetLink(emailInput: string, inTrx?: Db): Promise<{ url: string; expires_at: string } | undefined> {
    const email = normalizeEmail(emailInput);
    if ((await repo.memberships(inTrx ?? db, email)).length === 0) return undefined;
    if (inTrx) return makeLink('reset', email, {}, inTrx);
    return dialect.writeTransaction(db, (trx) => makeLink('reset', email, {}, trx), { keepsKeys: true });
  }

  /**
   * "Forgot password": the same answer whether or not the email is a member. For a member, a reset
   * link and its email (to their oldest workspace's profile: its name and timezone) are written in one
   * transaction and sent by the worker; the link is never returned, so it never reaches a log.
   * Returns the ids of the members with that email, for the log line.
   */
  async function forgotPassword(emailInput: string): Promise<{ userIds: string[] }> {
    const email = normalizeEmail(emailInput);
    const memberships = await repo.memberships(db, email);
    const first = memberships[0];
    const notifications = deps.notifications;
    if (first && notifications) {
      await dialect.writeTransaction(
        db,
        async (trx) => {
          const link = await makeLink('reset', email, {}, trx);
          await notifications.linkNotice(trx, {
            type: 'password.reset',
            workspaceId: first.workspace_id,
            userId: first.user_id,
            url: link.url,
            data: { workspace_name: first.workspace_name, expires_at: link.expires_at },
          });
        },
        { keepsKeys: true },
      );
    }
    return { userIds: memberships.map((m) => m.user_id) };
  }

  /** Changes a signed-in person's password; ends their other sessions. Throws 400 on a wrong current one. */
  async function changePassword(session: ConsoleSessionsTable, current: string, next: string): Promise<void> {
    const problem = passwordProblem(next);
    if (problem) throw fieldError('new_password', 'invalid_length', problem);
    const credential = await repo.findCredential(db, session.email);
    if (!credential || !(await verifyPassword(current, credential.password_hash))) {
      throw fieldError('current_password', 'incorrect', 'The current password is incorrect.');
    }
    const weak = weakPasswordProblem(next, [session.email]);
    if (weak) throw fieldError('new_password', 'too_common', weak);
    const hash = await hashPassword(next);
    const at = isoAt(clock.now());
    await dialect.writeTransaction(
      db,
      async (trx) => {
        await repo.upsertCredential(trx, session.email, hash, at);
        await endSessionsLocked(trx, session.email, at, { except: session.id });
        await passwordChanged(trx, session.email, at);
      },
      { keepsKeys: true },
    );
  }

  /** Adds a member with a role, makes their invite link (valid 7 days) and writes its email, in one transaction. */
  async function invite(
    workspaceId: string,
    input: { email: string; role: Role; name?: string },
    inTrx?: Db,
  ): Promise<{ user: User; invite_url: string; expires_at: string }> {
    const run = async (trx: Db) => {
      const user = await deps.users.create(
        { workspaceId, email: input.email, role: input.role, name: input.name },
        trx,
      );
      const link = await makeLink('invite', user.email, { workspaceId, userId: user.id }, trx);
      if (deps.notifications) {
        const ws = (await repo.memberships(trx, normalizeEmail(user.email))).find(
          (m) => m.workspace_id === workspaceId,
        );
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
    return inTrx ? run(inTrx) : dialect.writeTransaction(db, run);
  }

  return {
    makeLink,
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
    redeemLink,
    describeLink,
    forgotPassword,
    resetLink,
    changePassword,
    invite,
    memberships: (email: string) => repo.memberships(db, email),
    /** The same, in the caller's transaction (SQLite has one connection: a read beside an open write waits forever). */
    membershipsIn: (trx: Db, email: string) => repo.memberships(trx, email),
    /** The current member of a workspace with this email, in the caller's transaction. */
    memberIn: (trx: Db, email: string, workspaceId: string) => repo.membership(trx, normalizeEmail(email), workspaceId),
    /** Whether `password` is the console password of `email` (re-authentication before a change of factors). */
    async checkPassword(email: string, password: string): Promise<boolean> {
      const credential = await repo.findCredential(db, normalizeEmail(email));
      return verifyPassword(password, credential?.password_hash ?? (await dummyHash())).then(
        (ok) => ok && !!credential,
      );
    },
    pendingInvites: (workspaceId: string) => repo.pendingInvites(db, workspaceId, isoAt(clock.now())),
    sessions: (email: string) => repo.listSessions(db, email, isoAt(clock.now())),
    async endSession(email: string, id: string) {
      const at = isoAt(clock.now());
      const n = await dialect.writeTransaction(db, (trx) => endSessionsLocked(trx, email, at, { id }), {
        keepsKeys: true,
      });
      if (n === 0) throw new NotFoundError('session');
    },
    purgeFailures: () => repo.purgeFailures(db, isoAt(clock.now() - THROTTLE_WINDOW_MS)),
  };
}
export type ConsoleAuthService = ReturnType<typeof createConsoleAuthService>;
