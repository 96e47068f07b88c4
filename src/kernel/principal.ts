import type { RequestOrigin } from './audit-actions.js';
import type { Env } from './environments.js';
import { ForbiddenError } from './errors.js';
import type { Role } from './roles.js';

/** The data a caller works in: one workspace and one environment (live or test). */
export interface Tenant {
  workspaceId: string;
  env: Env;
}

interface PrincipalBase extends Tenant {
  /** The user acting. */
  userId: string;
  /** What the caller may do: the user's current role. */
  role: Role;
  /** Scopes the credential is limited to (API keys); null means every scope the role allows. */
  scopes: readonly string[] | null;
  /** The HTTP request it acts in (audit entries' request id, ip, user agent); absent outside HTTP. */
  origin?: RequestOrigin;
}

/** A request authenticated with an API key (`Authorization: Bearer svc_…`). */
export interface ApiKeyPrincipal extends PrincipalBase {
  kind: 'api_key';
  keyId: string;
  /** The key's name, for the audit entries it writes (read with the key). */
  keyName?: string;
  /**
   * The workspace's subscription is unpaid (read with the key; a change of it re-verifies every cached key, on every
   * process): with payments with Stripe on, its live requests answer 402 payment_required.
   */
  unpaid?: true;
}

/** A person signed in to the console (a session cookie). */
export interface SessionPrincipal extends PrincipalBase {
  kind: 'session';
  sessionId: string;
}

/**
 * The service itself acting across workspaces for no user: the delivery worker (`worker`), a
 * periodic job (`scheduler:<job id>`), the CLI (`cli`). The unit of work checks it like any principal.
 */
export interface SystemActor {
  kind: 'system';
  name: SystemActorName;
  userId: null;
  origin?: RequestOrigin;
}
/** `meter`: each API process's usage flush (docs/usage.md); `stripe`: a Stripe webhook event (docs/billing.md). */
export type SystemActorName = 'cli' | 'worker' | 'meter' | 'stripe' | `scheduler:${string}`;

/** The actor of the worker, a job or the CLI, named once. */
export function systemActor(name: SystemActorName): SystemActor {
  return Object.freeze({ kind: 'system', name, userId: null });
}

/**
 * Someone not yet a principal: a sign-in and its steps (`sign-in`), a single-use link asked for or redeemed (`link`),
 * a single sign-on arrival (`sso`). The credential they present (password, pending sign-in, link, identity provider's
 * answer) is checked by the change itself; the unit of work's check of them passes.
 */
export interface AnonymousActor {
  kind: 'anonymous';
  via: 'sign-in' | 'link' | 'sso';
  userId: null;
  origin?: RequestOrigin;
}
export function anonymousActor(via: AnonymousActor['via']): AnonymousActor {
  return Object.freeze({ kind: 'anonymous', via, userId: null });
}

/**
 * A person signed in to the console acting on their own sign-in, in no workspace: their sessions, second factors and
 * passkeys. The session (or pending sign-in) was resolved before the change; the unit of work's check passes.
 */
export interface PersonActor {
  kind: 'person';
  email: string;
  userId: null;
  origin?: RequestOrigin;
}
export function personActor(email: string): PersonActor {
  return Object.freeze({ kind: 'person', email, userId: null });
}

/** Whoever a write runs for: a caller (principal), the service itself (system actor), or someone signing in. */
export type Actor = Principal | SystemActor | AnonymousActor | PersonActor;

/**
 * Who is calling in a workspace, for every service call that acts for a user: the transport (HTTP key auth, the
 * console's session) turns its credential into one of these. The CLI, the worker and jobs act as a system actor.
 */
export type Principal = ApiKeyPrincipal | SessionPrincipal;

/** The same actor acting in an HTTP request (its audit entries name the request id, ip and user agent). */
export function withOrigin<A extends Actor>(actor: A, origin: RequestOrigin): A {
  return Object.freeze({ ...(actor as Actor), origin }) as A;
}

/** The workspace and environment a principal works in. */
export function tenantOf(p: Tenant): Tenant {
  return { workspaceId: p.workspaceId, env: p.env };
}

/** A stable name for logs and rate-limit counters: `key:<id>`, `session:<id>`, `system:<name>`. */
export function principalId(p: Actor): string {
  switch (p.kind) {
    case 'api_key':
      return `key:${p.keyId}`;
    case 'session':
      return `session:${p.sessionId}`;
    case 'system':
      return `system:${p.name}`;
    case 'anonymous':
      return `anonymous:${p.via}`;
    case 'person':
      return `person:${p.email}`;
  }
}

/** docs/console.md: only admins manage members, integrations, billing and everyone's keys. Throws ForbiddenError. */
export function requireAdmin(principal: Principal): void {
  if (principal.role !== 'admin') throw new ForbiddenError('Only workspace admins can do this.');
}
