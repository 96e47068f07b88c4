import * as oidc from 'openid-client';
import { AppError } from '../../kernel/errors.js';

/** The refusals of single sign-on (docs/sign-in.md#single-sign-on), each saying what to do. */
export const ssoUnavailable = (why: string) =>
  new AppError(
    503,
    'sso_unavailable',
    `The workspace's identity provider did not answer (${why}). Try again in a few minutes; the workspace's break-glass admin can sign in with a password.`,
    undefined,
    { 'retry-after': '60' },
  );
export const stateInvalid = () =>
  new AppError(
    400,
    'sso_state_invalid',
    'This single sign-on did not start in this browser, has expired (10 minutes) or was already used: start again from the sign-in page.',
  );

/**
 * The verified email of the signed-in person: from the ID token, or (providers that keep the ID token
 * small) from the UserInfo endpoint, whose subject must be the ID token's.
 */
export async function verifiedEmail(
  config: oidc.Configuration,
  tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers,
): Promise<string> {
  const claims = tokens.claims();
  if (!claims) throw refused('the provider sent no ID token');
  let found: Record<string, unknown> = claims;
  if (typeof claims.email !== 'string') found = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
  if (typeof found.email !== 'string' || !found.email || found.email_verified === false) {
    throw refused('the provider sent no verified email (ask for the "email" scope and verified addresses)');
  }
  return found.email.toLowerCase();
}

export function refused(why: string): AppError {
  return new AppError(401, 'sso_refused', `Single sign-on was refused: ${why}. Start again from the sign-in page.`);
}

/** What went wrong in the code exchange or the ID token's checks, said plainly. */
export function refusalOf(e: unknown): AppError {
  if (e instanceof oidc.ResponseBodyError) {
    return refused(
      `the identity provider refused the code (${e.error}${e.error_description ? `: ${e.error_description}` : ''}); a code works once and only for the sign-in that asked for it`,
    );
  }
  // openid-client wraps oauth4webapi's error, whose cause names the claim: walk the chain.
  let message = '';
  let claim: unknown;
  for (let c: unknown = e, i = 0; c && i < 4; c = (c as { cause?: unknown }).cause, i++) {
    const { message: m, claim: k } = c as { message?: unknown; claim?: unknown };
    if (typeof m === 'string') message = message ? `${message}: ${m}` : m;
    claim ??= k;
  }
  if (/fetch failed|ECONNREFUSED|timed? ?out|network/i.test(message)) return ssoUnavailable(message);
  const said: Record<string, string> = {
    aud: 'the ID token was issued for another client (audience)',
    azp: 'the ID token was issued for another client (authorized party)',
    exp: 'the ID token has expired',
    iss: 'the ID token was issued by another issuer',
    nonce: 'the ID token belongs to another sign-in (nonce)',
  };
  const known = typeof claim === 'string' ? said[claim] : undefined;
  if (known) return refused(known);
  if (/"exp"|expired/i.test(message)) return refused(said.exp as string);
  if (/signature/i.test(message)) return refused('the ID token signature is invalid');
  return refused(`the ID token was not accepted (${message})`);
}
