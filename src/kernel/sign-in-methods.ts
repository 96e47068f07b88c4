/**
 * How a console session signs in (docs/sign-in.md): the one definition of the second factors, the
 * sign-in methods a session records and its stages, used by the database types, the schemas, the
 * console-auth and mfa services and (type-only) the console.
 */
export const SECOND_FACTOR_METHODS = ['totp', 'recovery_code', 'passkey'] as const;
export type SecondFactorMethod = (typeof SECOND_FACTOR_METHODS)[number];

/** A password alone or with its second factor, a passkey alone, single sign-on. */
export const SIGN_IN_METHODS = [
  'password',
  'password+totp',
  'password+recovery_code',
  'password+passkey',
  'passkey',
  'sso',
] as const satisfies readonly (`password+${SecondFactorMethod}` | 'password' | 'passkey' | 'sso')[];
export type SignInMethod = (typeof SIGN_IN_METHODS)[number];

/** `enrol`: the person must add a second factor before anything else (a workspace requires one). */
export const SESSION_STAGES = ['full', 'enrol'] as const;
export type SessionStage = (typeof SESSION_STAGES)[number];
