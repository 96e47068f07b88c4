import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Recovery codes made at once (docs/sign-in.md#recovery-codes). */
export const RECOVERY_CODE_COUNT = 10;
// Crockford's base32 without I, L, O, U: 16 characters carry 80 random bits.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A new code: 16 characters in four groups (`7QK2-…`), 80 random bits. */
export function newRecoveryCode(): string {
  const bytes = randomBytes(16);
  let s = '';
  for (let i = 0; i < 16; i++) s += ALPHABET[(bytes[i] as number) & 31];
  return s.match(/.{4}/g)?.join('-') ?? s;
}

/** What a person types, in the stored form: upper case, no spaces or dashes, O/I/L read as 0/1/1. */
export function normalizeRecoveryCode(input: string): string {
  return input.toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1');
}

/** SHA-256 of a 32-bit-or-more random salt and the code (ASVS 2.6.2: under 112 bits, salted and hashed). */
export function recoveryDigest(code: string, salt: string): string {
  return createHash('sha256').update(salt).update(normalizeRecoveryCode(code)).digest('hex');
}

/** A salt and digest to store for `code`. */
export function hashRecoveryCode(code: string): { salt: string; digest: string } {
  const salt = randomBytes(16).toString('hex');
  return { salt, digest: recoveryDigest(code, salt) };
}

/** Whether `code` is the one stored as `digest` with `salt` (constant time). */
export function recoveryCodeMatches(code: string, stored: { salt: string; digest: string }): boolean {
  const a = Buffer.from(recoveryDigest(code, stored.salt), 'hex');
  const b = Buffer.from(stored.digest, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
