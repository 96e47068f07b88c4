import type { SsoSettingsInput } from './sso.schemas.js';

export type { SsoSettingsInput };

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** The first problem of an admin's single sign-on settings, said so they can be fixed; undefined when fine. */
export function ssoSettingsProblem(
  input: SsoSettingsInput,
  opts: { allowHttpIssuer: boolean; hasSecret: boolean },
): { field: string; issue: string; message: string } | undefined {
  let issuer: URL;
  try {
    issuer = new URL(input.issuer);
  } catch {
    return {
      field: 'issuer',
      issue: 'invalid_url',
      message: 'issuer must be a URL such as https://login.example.com.',
    };
  }
  if (issuer.protocol !== 'https:' && !(opts.allowHttpIssuer && issuer.protocol === 'http:')) {
    return {
      field: 'issuer',
      issue: 'insecure_scheme',
      message:
        'issuer must use https://. For local development, the server setting SSO_ALLOW_HTTP_ISSUER=true allows http://.',
    };
  }
  if (issuer.search || issuer.hash) {
    return {
      field: 'issuer',
      issue: 'invalid_url',
      message: 'issuer takes no query or fragment: give the issuer URL the provider publishes.',
    };
  }
  if (!input.client_secret && !opts.hasSecret) {
    return {
      field: 'client_secret',
      issue: 'required',
      message: 'client_secret is needed the first time (the provider shows it with the client id).',
    };
  }
  const bad = input.allowed_domains.find((d) => !DOMAIN.test(d.trim().toLowerCase()));
  if (bad !== undefined) {
    return {
      field: 'allowed_domains',
      issue: 'invalid_domain',
      message: `"${bad}" is not a domain name such as example.com.`,
    };
  }
  if (input.required && !input.break_glass_user_id) {
    return {
      field: 'break_glass_user_id',
      issue: 'required',
      message: 'Name a break-glass admin (a usr_… id) who keeps password sign-in when single sign-on is required.',
    };
  }
  return undefined;
}
