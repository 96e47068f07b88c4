import crypto, { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Env } from '../../db/types.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Length of the random part: 43 base62 characters ≈ 256 bits (at least 32 are required). */
export const KEY_RANDOM_LENGTH = 43;
const KEY_RE = /^svc_(live|test)_([0-9A-Za-z]{32,128})$/;

/** docs/api.md#keys-scopes-and-roles: a new plaintext key, `svc_<env>_` + 43 base62 characters from the CSPRNG (unbiased). */
export function generateKey(env: Env): string {
  let out = '';
  while (out.length < KEY_RANDOM_LENGTH) {
    for (const byte of randomBytes(64)) {
      // 62 * 4 = 248: bytes ≥ 248 are rejected so every character is equally likely.
      if (byte < 248 && out.length < KEY_RANDOM_LENGTH) out += BASE62[byte % 62];
    }
  }
  return `svc_${env}_${out}`;
}

// Performance (docs/performance.md#the-key-cache-and-its-epochs): the one-shot crypto.hash (Node ≥ 20.12)
// costs about half of createHash().update().digest().
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

/** The stored form of a key: hex SHA-256 of the whole key (the env prefix is part of it). */
export function digestKey(key: string): string {
  return oneShot ? oneShot('sha256', key, 'hex') : createHash('sha256').update(key).digest('hex');
}

/** Parses a presented key: its environment, or null when it is malformed. */
export function parseKey(key: string): { env: Env } | null {
  const m = KEY_RE.exec(key);
  return m ? { env: m[1] as Env } : null;
}

/** Constant-time comparison of two hex digests. */
export function digestsEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'hex');
  const bb = Buffer.from(b, 'hex');
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}

/** The part of a key safe to show in lists: `svc_live_AbCd`. */
export function displayPrefix(key: string): string {
  return key.slice(0, key.indexOf('_', 4) + 5);
}

/** Why an Authorization header is not `Bearer <key>`, in words that say the fix (docs/api.md#authentication-details). */
export function malformedHeader(header: string): string {
  const bearer = 'The Authorization header must be exactly `Bearer <API_KEY>`';
  if (/^(svc|wsk)_(live|test)_\S+$/.test(header)) return `${bearer}: put \`Bearer \` before the key.`;
  if (/^bearer\s/i.test(header) && !header.startsWith('Bearer ')) return `${bearer}, with a capital B.`;
  if (/^Bearer(\s|$)/.test(header))
    return `${bearer}: one space after \`Bearer\`, then the whole key and nothing else.`;
  // Only a scheme's name is repeated back, never what follows it (it may be a credential).
  const scheme = header.split(/\s/)[0] ?? '';
  if (/^[A-Za-z-]{1,20}$/.test(scheme) && scheme !== header) return `${bearer}; this one uses the ${scheme} scheme.`;
  return `${bearer}; this one is not in that form.`;
}

/** The 401 message for `Bearer <something that is not a key>`. */
export const MALFORMED_KEY =
  'The API key is malformed: keys are svc_live_ or svc_test_ followed by 43 letters and digits; copy the whole key.';
