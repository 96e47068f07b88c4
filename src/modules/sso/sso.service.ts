import * as oidc from 'openid-client';
import type { Db, Dialect } from '../../db/dialect.js';
import type { Role, WorkspaceSsoTable } from '../../db/types.js';
import type { AuditTrail } from '../../kernel/audit-actions.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { AppError, fieldError, NotFoundError } from '../../kernel/errors.js';
import type { Principal } from '../../kernel/principal.js';
import { anonymousActor, requireAdmin } from '../../kernel/principal.js';
import type { Sealer } from '../../lib/sealed.js';
import { expireInBatches } from '../../platform/batched-purge.js';
import type { Unit, UnitOfWork } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import { newToken, tokenDigest } from '../console-auth/tokens.js';
import { clientSecretAt, clientSecretSealedColumn, ssoRepository as repo } from './sso.repository.js';
import { refusalOf, refused, ssoUnavailable, stateInvalid, verifiedEmail } from './sso-refusals.js';
import { type SsoSettingsInput, ssoSettingsProblem } from './sso-settings.js';

/** How the service reaches identity providers (openid-client's custom fetch). */
export type SsoFetch = oidc.CustomFetch;

/** A single sign-on in flight lives 10 minutes and works once. */
const SIGN_IN_TTL_MS = 10 * 60_000;
const SCOPES = 'openid email profile';
/** A workspace's single sign-on settings as stored. */
type SsoRow = WorkspaceSsoTable;

/** What the settings page shows: everything but the client secret. */
export interface SsoSettings {
  issuer: string;
  client_id: string;
  client_secret_set: true;
  allowed_domains: string[];
  default_role: Role;
  required: boolean;
  break_glass_user_id: string | null;
  redirect_uri: string;
  updated_at: string;
}

/** A sign-in the identity provider vouched for: who, in which workspace, and whether they arrived just now. */
export interface SsoIdentity {
  email: string;
  workspaceId: string;
  userId: string;
  created: boolean;
}

/**
 * OpenID Connect single sign-on per workspace (docs/sign-in.md#single-sign-on): the admin's settings
 * (the client secret is written, never answered); the authorization code flow with PKCE, `state` and
 * `nonce` through openid-client, which checks the ID token's issuer, audience, expiry and signature;
 * first arrivals become members with the configured role. The clock is injected: the ID token's expiry
 * is judged by it.
 */
export function createSsoService(deps: {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  /** Sign-in's own changes (a sign-in started, its state used, a first arrival), as someone arriving by SSO. */
  uow: UnitOfWork;
  /** The users module's: a new member (`member.added`), a current member. */
  users: {
    create(
      u: Unit,
      input: { workspaceId: string; email: string; role: Role },
    ): Promise<{ id: string; email: string; name: string | null; role: string }>;
    memberOf(db: Db, workspaceId: string, userId: string): Promise<{ email: string; role: string } | undefined>;
  };
  /** The current member of a workspace with this email (lower case), if any (console-auth's). */
  memberByEmail: (trx: Db, email: string, workspaceId: string) => Promise<{ id: string } | undefined>;
  publicUrl: () => string;
  /** SSO_ALLOW_HTTP_ISSUER: an http:// issuer (local development and tests only). */
  allowHttpIssuer: boolean;
  /** How the service reaches the provider (default: fetch); tests put a hand in the middle. */
  fetch?: oidc.CustomFetch;
  timeoutMs?: number;
  /** Seals the client secret at rest (src/lib/sealed.ts); opened only for the exchange with the provider. */
  sealer: Sealer;
}) {
  const { db, clock, uow, sealer } = deps;
  const secretAt = clientSecretAt;
  const arriving = () => uow.as(anonymousActor('sso'));
  const redirectUri = () => `${deps.publicUrl()}/console/sso/callback`;

  /** The provider's configuration (discovery), with our client; throws 503 sso_unavailable when it does not answer. */
  async function providerOf(row: { workspace_id: string; issuer: string; client_id: string; client_secret: string }) {
    const skew = Math.round((clock.now() - Date.now()) / 1000);
    const clientSecret = sealer.open(row.client_secret, secretAt(row.workspace_id));
    try {
      const config = await oidc.discovery(
        new URL(row.issuer),
        row.client_id,
        { client_secret: clientSecret, [oidc.clockSkew]: skew },
        oidc.ClientSecretPost(clientSecret),
        {
          timeout: Math.ceil((deps.timeoutMs ?? 10_000) / 1000),
          ...(deps.allowHttpIssuer ? { execute: [oidc.allowInsecureRequests] } : {}),
          ...(deps.fetch ? { [oidc.customFetch]: deps.fetch } : {}),
        },
      );
      if (deps.fetch) config[oidc.customFetch] = deps.fetch;
      return config;
    } catch (e) {
      throw ssoUnavailable(`${row.issuer}: ${(e as Error).message}`);
    }
  }

  /** `sso.configured` with the settings that changed (none: no entry); the client secret only as "[redacted]". */
  function recordSso(audit: AuditTrail, workspaceId: string, before: SsoRow | null, after: SsoRow | null) {
    const shown = (r: SsoRow | null) =>
      r && {
        issuer: r.issuer,
        client_id: r.client_id,
        client_secret: r.client_secret,
        allowed_domains: JSON.parse(r.allowed_domains) as string[],
        default_role: r.default_role,
        required: r.required === 1,
        break_glass_user_id: r.break_glass_user_id,
      };
    const changes = changesOf(shown(before), shown(after), { redact: ['client_secret'] });
    if (Object.keys(changes).length === 0) return;
    audit.record({
      action: 'sso.configured',
      workspaceId,
      target: { type: 'sso', id: workspaceId },
      env: null,
      changes,
    });
  }

  async function settings(principal: Principal): Promise<SsoSettings | null> {
    requireAdmin(principal);
    const row = await repo.find(db, principal.workspaceId);
    if (!row) return null;
    return {
      issuer: row.issuer,
      client_id: row.client_id,
      client_secret_set: true,
      allowed_domains: JSON.parse(row.allowed_domains) as string[],
      default_role: row.default_role,
      required: row.required === 1,
      break_glass_user_id: row.break_glass_user_id,
      redirect_uri: redirectUri(),
      updated_at: row.updated_at,
    };
  }

  /**
   * Admin: sets the workspace's single sign-on. The client secret is needed the first time and kept
   * when left out later. "Required" needs a break-glass admin. The admins are told (never the secret).
   * Throws 400, 403.
   */
  async function configure(u: Unit<Principal>, input: SsoSettingsInput): Promise<SsoSettings> {
    const principal = u.actor;
    requireAdmin(principal);
    const at = isoAt(clock.now());
    await u.run(async (c) => {
      const { trx, audit } = c;
      const existing = await repo.find(trx, principal.workspaceId);
      const problem = ssoSettingsProblem(input, { allowHttpIssuer: deps.allowHttpIssuer, hasSecret: !!existing });
      if (problem) throw fieldError(problem.field, problem.issue, problem.message);
      const breakGlass = input.required ? (input.break_glass_user_id ?? null) : (input.break_glass_user_id ?? null);
      if (breakGlass) {
        const m = await deps.users.memberOf(trx, principal.workspaceId, breakGlass);
        if (m?.role !== 'admin') {
          throw fieldError(
            'break_glass_user_id',
            'not_admin',
            'The break-glass account must be a current admin of this workspace.',
          );
        }
      }
      const domains = [...new Set(input.allowed_domains.map((d) => d.trim().toLowerCase()))];
      const row = {
        workspace_id: principal.workspaceId,
        issuer: input.issuer.replace(/\/+$/, ''),
        client_id: input.client_id,
        // A secret given again as it is keeps its stored value (no change to record).
        client_secret:
          input.client_secret === undefined ||
          (existing && input.client_secret === sealer.open(existing.client_secret, secretAt(principal.workspaceId)))
            ? (existing?.client_secret ?? '')
            : sealer.seal(input.client_secret, secretAt(principal.workspaceId)),
        allowed_domains: JSON.stringify(domains),
        default_role: input.default_role,
        required: input.required ? 1 : 0,
        break_glass_user_id: breakGlass,
        created_at: existing?.created_at ?? at,
        updated_at: at,
      };
      await repo.upsert(trx, row);
      recordSso(audit, principal.workspaceId, existing ?? null, row);
      const by = principal.userId
        ? (await deps.users.memberOf(trx, principal.workspaceId, principal.userId))?.email
        : undefined;
      await c.emit({
        type: 'security.notice',
        notice: {
          type: 'sso.configured',
          workspaceId: principal.workspaceId,
          users: [],
          admins: true,
          data: {
            at,
            by,
            settings: {
              issuer: input.issuer,
              client_id: input.client_id,
              allowed_domains: domains,
              default_role: input.default_role,
              sso_required: input.required,
              break_glass_user_id: breakGlass,
            },
          },
        },
      });
    });
    return (await settings(principal)) as SsoSettings;
  }

  /** Admin: turns single sign-on off; password sign-in works again for everyone. Throws 403, 404. */
  async function remove(u: Unit<Principal>): Promise<void> {
    const principal = u.actor;
    requireAdmin(principal);
    const at = isoAt(clock.now());
    await u.run(async (c) => {
      const { trx, audit } = c;
      const existing = await repo.find(trx, principal.workspaceId);
      const r = await repo.remove(trx, principal.workspaceId);
      if (!existing || Number(r.numDeletedRows) === 0) throw new NotFoundError('single sign-on configuration');
      recordSso(audit, principal.workspaceId, existing, null);
      const by = principal.userId
        ? (await deps.users.memberOf(trx, principal.workspaceId, principal.userId))?.email
        : undefined;
      await c.emit({
        type: 'security.notice',
        notice: {
          type: 'sso.configured',
          workspaceId: principal.workspaceId,
          users: [],
          admins: true,
          data: { at, by, settings: { single_sign_on: 'off' } },
        },
      });
    });
  }

  /** The workspaces that accept this email's domain through single sign-on (the sign-in page's "Continue with SSO"). */
  async function discover(email: string): Promise<{ workspace_id: string; workspace_name: string }[]> {
    const domain = email.trim().toLowerCase().split('@')[1] ?? '';
    if (!domain) return [];
    const rows = await repo.forDomain(db, domain);
    return rows
      .filter((r) => (JSON.parse(r.allowed_domains) as string[]).includes(domain))
      .map((r) => ({ workspace_id: r.workspace_id, workspace_name: r.workspace_name }));
  }

  /**
   * Starts a sign-in: state, nonce and a PKCE verifier kept (the state as a digest) for 10 minutes and
   * bound to this browser by `browser` (a cookie's token). Returns where to send the browser.
   * Throws 404 (no single sign-on), 503 sso_unavailable.
   */
  async function start(workspaceId: string, loginHint?: string): Promise<{ url: string; browser: string }> {
    const row = await repo.find(db, workspaceId);
    if (!row) throw new NotFoundError('single sign-on for this workspace');
    const config = await providerOf(row);
    const state = newToken();
    const nonce = oidc.randomNonce();
    const verifier = oidc.randomPKCECodeVerifier();
    const browser = newToken();
    const now = clock.now();
    await arriving().run(({ trx }) =>
      repo.insertSignIn(trx, {
        state_digest: tokenDigest(state),
        workspace_id: workspaceId,
        browser_digest: tokenDigest(browser),
        nonce,
        code_verifier: verifier,
        created_at: isoAt(now),
        expires_at: isoAt(now + SIGN_IN_TTL_MS),
        used_at: null,
      }),
    );
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri(),
      scope: SCOPES,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...(loginHint ? { login_hint: loginHint } : {}),
    });
    return { url: url.href, browser };
  }

  /**
   * Finishes a sign-in from the provider's answer (the callback's query string): the state once, from the
   * browser that started it; the code exchanged with the PKCE verifier; the ID token checked (issuer,
   * audience, expiry, signature, nonce); the email verified and of an allowed domain. A first arrival
   * becomes a member with the configured role. Throws 400 sso_state_invalid, 401 sso_refused,
   * 403 sso_domain_not_allowed, 503 sso_unavailable.
   */
  async function finish(query: string, browser: string | undefined): Promise<SsoIdentity> {
    const params = new URLSearchParams(query);
    const state = params.get('state') ?? '';
    const pending = await arriving().run(({ trx }) => repo.takeSignIn(trx, tokenDigest(state), isoAt(clock.now())));
    if (
      !pending ||
      Date.parse(pending.expires_at) <= clock.now() ||
      !browser ||
      tokenDigest(browser) !== pending.browser_digest
    ) {
      throw stateInvalid();
    }
    const row = await repo.find(db, pending.workspace_id);
    if (!row) throw new NotFoundError('single sign-on for this workspace');
    const config = await providerOf(row);
    if (params.get('error')) {
      throw refused(
        `the provider answered ${params.get('error')}${params.get('error_description') ? `: ${params.get('error_description')}` : ''}`,
      );
    }
    let email: string;
    try {
      const tokens = await oidc.authorizationCodeGrant(config, new URL(`${redirectUri()}?${params}`), {
        pkceCodeVerifier: pending.code_verifier,
        expectedState: state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      email = await verifiedEmail(config, tokens);
    } catch (e) {
      throw e instanceof AppError ? e : refusalOf(e);
    }
    const domain = email.split('@')[1] ?? '';
    if (!(JSON.parse(row.allowed_domains) as string[]).includes(domain)) {
      throw new AppError(
        403,
        'sso_domain_not_allowed',
        `${email} is not of an email domain this workspace accepts through single sign-on; ask a workspace admin to add ${domain}.`,
      );
    }
    return arrive(email, row.workspace_id, row.default_role);
  }

  /** The member with this email, or (first arrival) a new one with the configured role, in one transaction. */
  async function arrive(email: string, workspaceId: string, role: Role): Promise<SsoIdentity> {
    return arriving().run(
      async (c) => {
        const { trx, audit } = c;
        const member = await deps.memberByEmail(trx, email, workspaceId);
        if (member) return { email, workspaceId, userId: member.id, created: false };
        const user = await deps.users.create(c.unit, { workspaceId, email, role });
        // A member added by their identity provider's word: recorded as joining, by themselves, by single sign-on.
        audit.record({
          action: 'member.invited',
          workspaceId,
          actor: { type: 'user', id: user.id, name: user.name ?? user.email },
          target: { type: 'user', id: user.id },
          env: null,
          changes: changesOf(null, { email: user.email, role: user.role, via: 'sso' }),
        });
        return { email, workspaceId, userId: user.id, created: true };
      },
      { changesKeys: true },
    );
  }

  /** Of these memberships, the workspaces that require single sign-on of that member (not the break-glass admin). */
  async function ssoOnly(memberships: { workspace_id: string; user_id: string }[]): Promise<string[]> {
    const rows = await repo.requiring(
      db,
      memberships.map((m) => m.workspace_id),
    );
    return rows
      .filter((r) => !memberships.some((m) => m.workspace_id === r.workspace_id && m.user_id === r.break_glass_user_id))
      .map((r) => r.workspace_id);
  }

  return {
    /** The secrets it keeps sealed at rest (src/platform/sealed-columns.ts). */
    sealedColumns: [clientSecretSealedColumn],
    settings,
    configure,
    remove,
    discover,
    start,
    finish,
    ssoOnly,
    redirectUri,
    /** The purge-sign-in-steps job's part, written with its unit. */
    purge: (u: Unit) => {
      const before = isoAt(clock.now());
      return expireInBatches(u, (trx, limit) => repo.purge(trx, before, limit));
    },
  };
}
export type SsoService = ReturnType<typeof createSsoService>;
