import type { Db } from '../../db/dialect.js';
import type { ConsoleLinkPurpose, ConsoleSessionsTable } from '../../db/types.js';
import type { AuditTrail } from '../../kernel/audit-actions.js';
import { isoAt } from '../../kernel/clock.js';
import { AppError, fieldError } from '../../kernel/errors.js';
import { anonymousActor } from '../../kernel/principal.js';
import type { SecondFactorMethod } from '../../kernel/sign-in-methods.js';
import type { Change, Unit, WriteTx } from '../../platform/unit-of-work.js';
import { consoleAuthRepository as repo } from './console-auth.repository.js';
import { type ConsoleAuthDeps, normalizeEmail } from './console-auth-deps.js';
import { weakPasswordProblem } from './password-strength.js';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';
import { REDACTED, recordForPerson } from './person-audit.js';
import {
  type Client,
  clientActor,
  type createSignInSteps,
  type OpenSession,
  personActorOf,
  type SecondFactorNeeded,
  type SessionKind,
} from './sign-in-steps.js';
import { isTokenShaped, newToken, tokenDigest } from './tokens.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Link lifetimes (docs/console.md#passwords-and-links): invites and first passwords 7 days, password resets 1 hour. */
const LINK_TTL_MS: Record<ConsoleLinkPurpose, number> = { set_password: 7 * DAY, invite: 7 * DAY, reset: HOUR };

const badLink = () =>
  new AppError(400, 'invalid_link', 'This link is invalid, expired or already used; ask for a new one.');

/**
 * Passwords and single-use links (docs/console.md#passwords-and-links): links for invites, first
 * passwords and resets, setting a password from one (which signs the person in), "forgot password",
 * and changing a password; each ends the person's other sessions through `sessions`.
 */
export function createPasswordLinks(
  deps: ConsoleAuthDeps,
  sessions: {
    endSessionsLocked(
      trx: WriteTx,
      email: string,
      at: string,
      only?: { id?: string; except?: string },
    ): Promise<number>;
    newSession(email: string, now: number, client: Client, kind?: SessionKind): OpenSession & { token: string };
    /** `session.signed_in` of a session just opened, in its transaction. */
    recordSignIn(trx: Db, audit: AuditTrail, session: ConsoleSessionsTable): Promise<number>;
  } & Pick<ReturnType<typeof createSignInSteps>, 'nextStep' | 'startPending'>,
) {
  const { db, clock, uow } = deps;
  const { endSessionsLocked, newSession, nextStep, startPending, recordSignIn } = sessions;

  /** `user.password_changed` in each workspace of the person, as them (the password itself never appears). */
  const recordPassword = (trx: Db, audit: AuditTrail, email: string, had: boolean) =>
    recordForPerson(trx, audit, email, {
      action: 'user.password_changed',
      changes: { password: { before: had ? REDACTED : null, after: REDACTED } },
    });

  /** Makes a single-use link in `u`'s change; the token is in the URL and nowhere else. */
  async function makeLink(
    u: Unit,
    purpose: ConsoleLinkPurpose,
    email: string,
    scope: { workspaceId?: string; userId?: string } = {},
  ): Promise<{ url: string; expires_at: string }> {
    const token = newToken();
    const now = clock.now();
    const expires_at = isoAt(now + LINK_TTL_MS[purpose]);
    await u.run(({ trx }) =>
      repo.insertLink(trx, {
        digest: tokenDigest(token),
        purpose,
        email: normalizeEmail(email),
        workspace_id: scope.workspaceId ?? null,
        user_id: scope.userId ?? null,
        created_at: isoAt(now),
        expires_at,
        used_at: null,
      }),
    );
    return { url: `${deps.publicUrl()}/console/set-password?token=${token}`, expires_at };
  }

  /** Tells a person their password changed (docs/notifications.md: once, in their oldest workspace), in `c`. */
  async function passwordChanged(c: Change, email: string, at: string): Promise<void> {
    const [first] = await repo.memberships(c.trx, email);
    if (!first) return;
    await c.emit({
      type: 'security.notice',
      notice: {
        type: 'password.changed',
        workspaceId: first.workspace_id,
        users: [first.user_id],
        admins: false,
        data: { at },
      },
    });
  }

  /** Sets the password from a single-use link; ends every session of that person. Throws 400 invalid_link, 400 on a weak password. */
  async function redeemLink(
    token: string,
    password: string,
    client: Client,
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
    const hash = await hashPassword(password, deps.passwordCost);
    // A link proves the email, not the second factor: a person who has one gives it next (docs/sign-in.md).
    // Where single sign-on is required, the new session simply does not reach that workspace (sessionMemberships).
    const next = await nextStep(found.email, await repo.memberships(db, found.email)).catch((e: unknown) => {
      if (e instanceof AppError && e.code === 'sso_required')
        return { methods: [] as SecondFactorMethod[], stage: 'full' as const };
      throw e;
    });
    return uow
      .as(clientActor('link', client))
      .run(async (c): Promise<(OpenSession & { token: string }) | { secondFactor: SecondFactorNeeded }> => {
        const { trx, audit } = c;
        const link = await repo.findLink(trx, digest);
        const now = clock.now();
        if (!link || link.used_at !== null || Date.parse(link.expires_at) <= now) throw badLink();
        const member = link.workspace_id ? await repo.membership(trx, link.email, link.workspace_id) : undefined;
        if (link.workspace_id && !member) throw badLink();
        // A link of someone who is no longer a member anywhere (a reset link outliving its person) signs no one in.
        if ((await repo.memberships(trx, link.email)).length === 0) throw badLink();
        if (!(await repo.useLink(trx, digest, isoAt(now)))) throw badLink();
        const had = (await repo.findCredential(trx, link.email)) !== undefined;
        await repo.upsertCredential(trx, link.email, hash, isoAt(now));
        await recordPassword(trx, audit, link.email, had);
        await endSessionsLocked(trx, link.email, isoAt(now));
        // A reset replaces a password; a first password (invite, set_password) replaces none.
        if (link.purpose === 'reset') await passwordChanged(c, link.email, isoAt(now));
        // An invite's first password: the invited member joined (docs/api.md#platform-events).
        if (link.purpose === 'invite' && member) {
          await c.emit({ type: 'member.joined', member: { ...member, email: link.email }, at: isoAt(now) });
        }
        if (next.methods.length > 0)
          return { secondFactor: await startPending(trx, link.email, client.ip, next.methods) };
        // Setting the password signs the person in (docs/console.md#passwords-and-links): a fresh
        // session, as sign-in makes, in the same transaction that ended every earlier one.
        const opened = newSession(link.email, now, client, { method: 'password', stage: next.stage });
        await repo.insertSession(trx, opened.session);
        await recordSignIn(trx, audit, opened.session);
        return opened;
      });
  }

  /** Whom a live single-use link is for (the set-password page names the account); throws 400 invalid_link. */
  async function describeLink(token: string): Promise<{ email: string; expires_at: string }> {
    if (!isTokenShaped(token)) throw badLink();
    const found = await repo.findLink(db, tokenDigest(token));
    if (!found || found.used_at !== null || Date.parse(found.expires_at) <= clock.now()) throw badLink();
    return { email: found.email, expires_at: found.expires_at };
  }

  /** `user.reset_link_created` in each workspace of the person: when the link ends (never the link or its token). */
  const recordResetLink = (trx: Db, audit: AuditTrail, email: string, expiresAt: string, byRunner: boolean) =>
    recordForPerson(trx, audit, email, {
      action: 'user.reset_link_created',
      changes: { expires_at: { before: null, after: expiresAt } },
      byRunner,
    });

  /**
   * A reset link valid 1 hour for a member's email (`wsvc users reset-link`: recorded as the CLI's when its actor is
   * the system's); undefined when no one has it.
   */
  async function resetLink(u: Unit, emailInput: string): Promise<{ url: string; expires_at: string } | undefined> {
    const email = normalizeEmail(emailInput);
    return u.run(async (c) => {
      if ((await repo.memberships(c.trx, email)).length === 0) return undefined;
      const link = await makeLink(c.unit, 'reset', email, {});
      await recordResetLink(c.trx, c.audit, email, link.expires_at, c.actor.kind === 'system');
      return link;
    });
  }

  /**
   * "Forgot password": the same answer whether or not the email is a member. For a member, a reset
   * link and its email (to their oldest workspace's profile: its name and timezone) are written in one
   * transaction and sent by the worker; the link is never returned, so it never reaches a log.
   * Returns the ids of the members with that email, for the log line.
   */
  async function forgotPassword(emailInput: string, client?: Client): Promise<{ userIds: string[] }> {
    const email = normalizeEmail(emailInput);
    const memberships = await repo.memberships(db, email);
    const first = memberships[0];
    if (first) {
      await uow.as(client ? clientActor('link', client) : anonymousActor('link')).run(async (c) => {
        const link = await makeLink(c.unit, 'reset', email, {});
        // Anyone may ask for a member's email: the entries name the member, as a failed sign-in does.
        await recordResetLink(c.trx, c.audit, email, link.expires_at, false);
        await c.emit({
          type: 'link.issued',
          notice: {
            type: 'password.reset',
            workspaceId: first.workspace_id,
            userId: first.user_id,
            url: link.url,
            data: { workspace_name: first.workspace_name, expires_at: link.expires_at },
          },
        });
      });
    }
    return { userIds: memberships.map((m) => m.user_id) };
  }

  /** Changes a signed-in person's password; ends their other sessions. Throws 400 on a wrong current one. */
  async function changePassword(
    session: ConsoleSessionsTable,
    current: string,
    next: string,
    client?: Client,
  ): Promise<void> {
    const problem = passwordProblem(next);
    if (problem) throw fieldError('new_password', 'invalid_length', problem);
    const credential = await repo.findCredential(db, session.email);
    if (!credential || !(await verifyPassword(current, credential.password_hash))) {
      throw fieldError('current_password', 'incorrect', 'The current password is incorrect.');
    }
    const weak = weakPasswordProblem(next, [session.email]);
    if (weak) throw fieldError('new_password', 'too_common', weak);
    const hash = await hashPassword(next, deps.passwordCost);
    const at = isoAt(clock.now());
    await uow.as(personActorOf(session.email, client)).run(async (c) => {
      const { trx, audit } = c;
      await repo.upsertCredential(trx, session.email, hash, at);
      await recordPassword(trx, audit, session.email, true);
      await endSessionsLocked(trx, session.email, at, { except: session.id });
      await passwordChanged(c, session.email, at);
    });
  }

  return { makeLink, redeemLink, describeLink, forgotPassword, resetLink, changePassword };
}
