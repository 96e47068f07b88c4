import { createHash, randomBytes } from 'node:crypto';

/** A 256-bit random token (session cookie, single-use link), base64url. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** What the database keeps of a token: its SHA-256, hex. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * The CSRF token of a session, derived from its secret cookie token: the page reads it from the
 * session endpoint and sends it as X-CSRF-Token; a cross-site page can read neither.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHash('sha256').update(`csrf:${sessionToken}`).digest('base64url');
}

/** Tokens are 43 base64url characters; anything else is not looked up. */
export function isTokenShaped(value: string | undefined): value is string {
  return value !== undefined && /^[A-Za-z0-9_-]{43}$/.test(value);
}
