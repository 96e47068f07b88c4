import type { Db, Dialect } from '../../db/dialect.js';
import type { ConsoleLinkPurpose, ConsoleSessionsTable, Env, Role } from '../../db/types.js';
import { type Clock, isoAt } from '../../lib/clock.js';
import { AppError, fieldError, NotFoundError } from '../../lib/errors.js';
import { newId } from '../../lib/ids.js';
import type { SessionPrincipal } from '../../lib/principal.js';
import { sessionLock } from '../auth/write-runner.js';
import type { User } from '../users/users.schemas.js';
import type { UsersService } from '../users/users.service.js';
import { consoleAuthRepository as repo } from './console-auth.repository.js';
import { dummyHash, hashPassword, passwordProblem, verifyPassword } from './passwords.js';
import { csrfTokenFor, isTokenShaped, newToken, tokenDigest } from './tokens.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Session lifetimes (docs/console.md#sessions). */
export const SESSION_IDLE_MS = 12 * HOUR;
export const SESSION_ABSOLUTE_MS = 30 * DAY;
/** Link lifetimes (docs/console.md#passwords-and-links): invites and first passwords 7 days, password resets 1 hour. */
const LINK_TTL_MS: Record<ConsoleLinkPurpose, number> = { set_password: 7 * DAY, invite: 7 * DAY, reset: HOUR };
const THROTTLE_WINDOW_MS = 15 * MINUTE;
const MAX_FAILURES_PER_EMAIL = 5;
const MAX_FAILURES_PER_IP = 50;
/** last_seen_at is written at most once a minute per session. */
const TOUCH_EVERY_MS = MINUTE;

export interface OpenSession {
  session: ConsoleSessionsTable;
  csrfToken: string;
}

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
}) {
  const { db, dialect, clock } = deps;

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

  /** docs/console.md: 5 failures per email and 50 per IP in 15 minutes, then 429 until the window moves on. */
  async function throttle(email: string, ip: string): Promise<void> {
    const since = isoAt(clock.now() - THROTTLE_WINDOW_MS);
    const [byEmail, byIp] = await Promise.all([
      repo.countFailures(db, `email:${email}`, since),
      repo.countFailures(db, `ip:${ip}`, since),
    ]);
    if (byEmail >= MAX_FAILURES_PER_EMAIL || byIp >= MAX_FAILURES_PER_IP) {
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
  }): Promise<OpenSession & { token: string }> {
    const email = normalizeEmail(input.email);
    await throttle(email, input.ip);
    const credential = await repo.findCredential(db, email);
    const ok = await verifyPassword(input.password, credential?.password_hash ?? (await dummyHash()));
    const memberships = ok && credential ? await repo.memberships(db, email) : [];
    if (!ok || !credential || memberships.length === 0) {
      const at = isoAt(clock.now());
      await dialect.writeTransaction(db, async (trx) => {
        await repo.insertFailure(trx, newId('request'), `email:${email}`, at);
        await repo.insertFailure(trx, newId('request'), `ip:${input.ip}`, at);
      });
      throw new AppError(401, 'invalid_credentials', 'The email or password is incorrect.');
    }
    const token = newToken();
    const now = clock.now();
    const session: ConsoleSessionsTable = {
      id: newId('session', now),
      token_digest: tokenDigest(token),
      email,
      created_at: isoAt(now),
      last_seen_at: isoAt(now),
      expires_at: isoAt(now + SESSION_ABSOLUTE_MS),
      ended_at: null,
      user_agent: input.userAgent?.slice(0, 200) ?? null,
      ip: input.ip,
    };
    await dialect.writeTransaction(db, (trx) => repo.insertSession(trx, session));
    return { token, session, csrfToken: csrfTokenFor(token) };
  }

  /** The open session of a cookie token, or undefined (unknown, ended, idle or past 30 days). */
  async function sessionOf(token: string | undefined): Promise<OpenSession | undefined> {
    if (!isTokenShaped(token)) return undefined;
    const session = await repo.findSessionByDigest(db, tokenDigest(token));
    if (!session || session.ended_at !== null) return undefined;
    const now = clock.now();
    if (Date.parse(session.expires_at) <= now || Date.parse(session.last_seen_at) + SESSION_IDLE_MS <= now) {
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
    const m = await repo.membership(db, session.email, workspaceId);
    if (!m) throw new NotFoundError('workspace');
    return { kind: 'session', sessionId: session.id, userId: m.id, workspaceId, env, role: m.role, scopes: null };
  }

  async function signOut(session: ConsoleSessionsTable): Promise<void> {
    const at = isoAt(clock.now());
    await dialect.writeTransaction(db, async (trx) => {
      await dialect.holdExclusive(trx, sessionLock(session.id));
      await repo.endSessions(trx, session.email, at, { id: session.id });
    });
  }

  /** Sets the password from a single-use link; ends every session of that person. Throws 400 invalid_link. */
  async function redeemLink(token: string, password: string): Promise<{ email: string }> {
    const problem = passwordProblem(password);
    if (problem) throw fieldError('password', 'invalid_length', problem);
    if (!isTokenShaped(token)) throw badLink();
    const digest = tokenDigest(token);
    const hash = await hashPassword(password);
    return dialect.writeTransaction(db, async (trx) => {
      const link = await repo.findLink(trx, digest);
      const now = clock.now();
      if (!link || link.used_at !== null || Date.parse(link.expires_at) <= now) throw badLink();
      if (link.workspace_id && !(await repo.membership(trx, link.email, link.workspace_id))) throw badLink();
      if (!(await repo.useLink(trx, digest, isoAt(now)))) throw badLink();
      await repo.upsertCredential(trx, link.email, hash, isoAt(now));
      await endSessionsLocked(trx, link.email, isoAt(now));
      return { email: link.email };
    });
  }

  /**
   * "Forgot password": a reset link valid 1 hour when the email is a member somewhere; the same
   * answer either way. Returns the link for the caller to deliver (logged until email exists).
   */
  async function forgotPassword(emailInput: string): Promise<{ url: string } | undefined> {
    const email = normalizeEmail(emailInput);
    if ((await repo.memberships(db, email)).length === 0) return undefined;
    return dialect.writeTransaction(db, (trx) => makeLink('reset', email, {}, trx));
  }

  /** Changes a signed-in person's password; ends their other sessions. Throws 400 on a wrong current one. */
  async function changePassword(session: ConsoleSessionsTable, current: string, next: string): Promise<void> {
    const problem = passwordProblem(next);
    if (problem) throw fieldError('new_password', 'invalid_length', problem);
    const credential = await repo.findCredential(db, session.email);
    if (!credential || !(await verifyPassword(current, credential.password_hash))) {
      throw fieldError('current_password', 'incorrect', 'The current password is incorrect.');
    }
    const hash = await hashPassword(next);
    const at = isoAt(clock.now());
    await dialect.writeTransaction(db, async (trx) => {
      await repo.upsertCredential(trx, session.email, hash, at);
      await endSessionsLocked(trx, session.email, at, { except: session.id });
    });
  }

  /** Adds a member with a role and makes their invite link (valid 7 days). */
  async function invite(
    workspaceId: string,
    input: { email: string; role: Role; name?: string },
  ): Promise<{ user: User; invite_url: string; expires_at: string }> {
    return dialect.writeTransaction(db, async (trx) => {
      const user = await deps.users.create(
        { workspaceId, email: input.email, role: input.role, name: input.name },
        trx,
      );
      const link = await makeLink('invite', user.email, { workspaceId, userId: user.id }, trx);
      return { user, invite_url: link.url, expires_at: link.expires_at };
    });
  }

  return {
    makeLink,
    signIn,
    sessionOf,
    principalFor,
    signOut,
    redeemLink,
    forgotPassword,
    changePassword,
    invite,
    memberships: (email: string) => repo.memberships(db, email),
    pendingInvites: (workspaceId: string) => repo.pendingInvites(db, workspaceId, isoAt(clock.now())),
    sessions: (email: string) => repo.listSessions(db, email, isoAt(clock.now())),
    async endSession(email: string, id: string) {
      const at = isoAt(clock.now());
      const n = await dialect.writeTransaction(db, (trx) => endSessionsLocked(trx, email, at, { id }));
      if (n === 0) throw new NotFoundError('session');
    },
    purgeFailures: () => repo.purgeFailures(db, isoAt(clock.now() - THROTTLE_WINDOW_MS)),
  };
}
export type ConsoleAuthService = ReturnType<typeof createConsoleAuthService>;
