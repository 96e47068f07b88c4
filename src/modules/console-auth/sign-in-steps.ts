import type { Db, Dialect } from '../../db/dialect.js';
import type { ConsoleSessionsTable } from '../../db/types.js';
import type { RequestOrigin } from '../../kernel/audit-actions.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { AppError } from '../../kernel/errors.js';
import { newId } from '../../kernel/ids.js';
import {
  type AnonymousActor,
  anonymousActor,
  type PersonActor,
  personActor,
  withOrigin,
} from '../../kernel/principal.js';
import type { SecondFactorMethod, SessionStage, SignInMethod } from '../../kernel/sign-in-methods.js';
import type { Change, Unit, UnitOfWork, WriteTx } from '../../platform/unit-of-work.js';
import { consoleAuthRepository as repo } from './console-auth.repository.js';
import { isTokenShaped, newToken, tokenDigest } from './tokens.js';

export interface OpenSession {
  session: ConsoleSessionsTable;
  csrfToken: string;
}

/** How a session opens: its method, its stage, and the one workspace of a single sign-on session. */
export interface SessionKind {
  method: SignInMethod;
  stage?: SessionStage;
  workspaceId?: string | null;
}

/** What sign-in asks of the second-factor and single sign-on modules (docs/sign-in.md); absent: a password alone. */
export interface SignInGate {
  /** Whether the person must give a second factor after the password, and which they have. */
  factors(email: string): Promise<SecondFactorMethod[]>;
  /** Whether any of these workspaces requires its members to have a second factor. */
  requiresSecondFactor(workspaceIds: string[]): Promise<boolean>;
  /** Those of the memberships whose workspace requires single sign-on of this member (not its break-glass admin). */
  ssoOnly(memberships: { workspace_id: string; user_id: string }[]): Promise<string[]>;
}

/** The answer to a password accepted when a second factor is still to come. */
export interface SecondFactorNeeded {
  token: string;
  methods: SecondFactorMethod[];
  expires_at: string;
}

/** A password accepted waits this long for its second factor. */
const PENDING_TTL_MS = 5 * 60_000;

export const ssoRequired = () =>
  new AppError(
    403,
    'sso_required',
    'This workspace signs in with single sign-on only: use "Continue with SSO" on the sign-in page.',
  );

/** What a sign-in step needs of the rest of console-auth (console-auth.service.ts). */
interface StepDeps {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  uow: UnitOfWork;
  gate?: SignInGate;
  openSession(u: Unit, email: string, client: Client, kind: SessionKind): Promise<OpenSession & { token: string }>;
  throttle(email: string | null, ip: string): Promise<void>;
  recordFailure(email: string, client: Client, step: 'password' | 'second_factor'): Promise<void>;
}

/** Who is signing in, as the request tells: the address (throttle), user agent (sessions list), origin (audit log). */
export type Client = { ip: string; userAgent?: string; origin?: RequestOrigin };

/** Someone signing in (or redeeming a link, or arriving by single sign-on) from this client. */
export function clientActor(via: AnonymousActor['via'], client: Client): AnonymousActor {
  const actor = anonymousActor(via);
  return client.origin ? withOrigin(actor, client.origin) : actor;
}

/** A person acting on their own sign-in, from this client (none: no request, e.g. a test). */
export function personActorOf(email: string, client?: Client): PersonActor {
  const actor = personActor(email);
  return client?.origin ? withOrigin(actor, client.origin) : actor;
}

/**
 * The steps of a sign-in after the password (docs/sign-in.md#signing-in): the decision (refused where
 * single sign-on is required, a second factor, the enrol stage), the pending sign-in and its second
 * step, a passkey alone, and which workspaces a session reaches.
 */
export function createSignInSteps(deps: StepDeps) {
  const { db, clock, uow, openSession, throttle, recordFailure } = deps;
  /**
   * The steps after a right password (docs/sign-in.md#signing-in): refused where every workspace requires
   * single sign-on; a second factor asked for when the person has one; else a session, limited to
   * enrolling one when a workspace requires it.
   */
  async function afterPassword(
    email: string,
    memberships: { workspace_id: string; user_id: string }[],
    client: Client,
  ): Promise<(OpenSession & { token: string }) | { secondFactor: SecondFactorNeeded }> {
    const next = await nextStep(email, memberships);
    if (next.methods.length > 0) {
      const pending = await uow
        .as(clientActor('sign-in', client))
        .run(({ trx }) => startPending(trx, email, client.ip, next.methods));
      return { secondFactor: pending };
    }
    return openSession(uow.as(clientActor('sign-in', client)), email, client, {
      method: 'password',
      stage: next.stage,
    });
  }

  /**
   * What follows a right password (or a password set from a link): refused where every workspace requires
   * single sign-on (403 sso_required); the second factors to ask for; else the stage of the session.
   */
  async function nextStep(
    email: string,
    memberships: { workspace_id: string; user_id: string }[],
  ): Promise<{ methods: SecondFactorMethod[]; stage: SessionStage }> {
    const gate = deps.gate;
    if (!gate) return { methods: [], stage: 'full' };
    if ((await gate.ssoOnly(memberships)).length === memberships.length) throw ssoRequired();
    const methods = await gate.factors(email);
    const enrol = methods.length === 0 && (await gate.requiresSecondFactor(memberships.map((m) => m.workspace_id)));
    return { methods, stage: enrol ? 'enrol' : 'full' };
  }

  /** A pending sign-in (the password accepted, the second factor to come), in `trx`. */
  async function startPending(
    trx: WriteTx,
    email: string,
    ip: string,
    methods: SecondFactorMethod[],
  ): Promise<SecondFactorNeeded> {
    const token = newToken();
    const now = clock.now();
    const expires_at = isoAt(now + PENDING_TTL_MS);
    await repo.insertPending(trx, {
      digest: tokenDigest(token),
      email,
      ip,
      created_at: isoAt(now),
      expires_at,
      used_at: null,
    });
    return { token, methods, expires_at };
  }

  /**
   * The second step of a sign-in: `check` verifies the second factor in the transaction that uses the
   * pending sign-in once and opens the session. A wrong one counts toward the throttle. Throws 401
   * invalid_credentials (an unknown, used or expired pending sign-in), 401 invalid_code, 429 rate_limited.
   */
  async function completeSecondFactor(
    token: string,
    check: (c: Change, email: string) => Promise<SignInMethod | false>,
    client: Client,
  ): Promise<OpenSession & { token: string }> {
    const stale = () =>
      new AppError(401, 'invalid_credentials', 'This sign-in has expired or was already used; sign in again.');
    const pending = isTokenShaped(token) ? await repo.findPending(db, tokenDigest(token)) : undefined;
    if (!pending || pending.used_at !== null || Date.parse(pending.expires_at) <= clock.now()) throw stale();
    await throttle(pending.email, client.ip);
    const out = await uow.as(clientActor('sign-in', client)).run(async (c) => {
      const method = await check(c, pending.email);
      if (!method) return undefined;
      if (!(await repo.takePending(c.trx, pending.digest, isoAt(clock.now())))) throw stale();
      return openSession(c.unit, pending.email, client, { method });
    });
    if (out) return out;
    await recordFailure(pending.email, client, 'second_factor');
    throw new AppError(401, 'invalid_code', 'That code is wrong or was already used; enter the current one.');
  }

  /** The email of a live pending sign-in (the passkey step asks for that person's passkeys); throws 401. */
  async function pendingEmail(token: string): Promise<string> {
    const pending = isTokenShaped(token) ? await repo.findPending(db, tokenDigest(token)) : undefined;
    if (!pending || pending.used_at !== null || Date.parse(pending.expires_at) <= clock.now()) {
      throw new AppError(401, 'invalid_credentials', 'This sign-in has expired or was already used; sign in again.');
    }
    return pending.email;
  }

  /**
   * Signs in with a passkey alone (docs/sign-in.md#passkeys): `email` is the passkey's person, checked by
   * the mfa service. Refused like a password where every workspace requires single sign-on.
   */
  async function openPasskeySession(email: string, client: Client): Promise<OpenSession & { token: string }> {
    const memberships = await repo.memberships(db, email);
    if (memberships.length === 0) throw new AppError(401, 'invalid_credentials', 'This passkey signs no one in.');
    const gate = deps.gate;
    if (gate && (await gate.ssoOnly(memberships)).length === memberships.length) throw ssoRequired();
    return openSession(uow.as(clientActor('sign-in', client)), email, client, { method: 'passkey' });
  }

  /** A passkey sign-in that failed: counted against the address (there is no email to count against). */
  async function passkeyFailed(ip: string): Promise<void> {
    await uow
      .as(clientActor('sign-in', { ip }))
      .run(({ trx }) => repo.insertFailure(trx, newId('request'), `ip:${ip}`, isoAt(clock.now())));
  }

  /** Once a person in the enrol stage has a second factor, their sessions reach every page again. */
  async function finishEnrolment(email: string): Promise<void> {
    await uow.as(personActor(email)).run(({ trx }) => repo.finishEnrolment(trx, email));
  }

  /**
   * The memberships a session reaches: a single sign-on session its workspace only; any other not those
   * whose workspace requires single sign-on of this member.
   */
  async function sessionMemberships(session: ConsoleSessionsTable) {
    const all = await repo.memberships(db, session.email);
    if (session.workspace_id) return all.filter((m) => m.workspace_id === session.workspace_id);
    const gate = deps.gate;
    if (!gate) return all;
    const ssoOnly = new Set(await gate.ssoOnly(all));
    return all.filter((m) => !ssoOnly.has(m.workspace_id));
  }

  return {
    afterPassword,
    nextStep,
    startPending,
    completeSecondFactor,
    pendingEmail,
    openPasskeySession,
    passkeyFailed,
    finishEnrolment,
    sessionMemberships,
  };
}
