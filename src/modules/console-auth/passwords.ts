import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * OWASP's scrypt parameters (N=2^17, r=8, p=1: 128 MiB, about a second on one core here): the default of
 * PASSWORD_HASH_COST (log2 N, docs/settings.md). Each hash keeps its own parameters, so a changed cost applies to
 * passwords set from then on, and every stored hash still verifies.
 */
export const DEFAULT_PASSWORD_COST = 17;
const params = (cost: number) => ({ N: 2 ** cost, r: 8, p: 1 });
const KEYLEN = 32;

function derive(password: string, salt: Buffer, p: { N: number; r: number; p: number }): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    // scrypt needs 128·N·r bytes; twice that leaves room for the rest, at most 512 MiB (a stored hash names its N).
    scrypt(password.normalize('NFC'), salt, KEYLEN, { ...p, maxmem: Math.min(256 * p.N * p.r, 2 ** 29) }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

/** Hashes a password as `scrypt$N$r$p$salt$hash` (base64url), so the parameters can change later. */
export async function hashPassword(password: string, cost = DEFAULT_PASSWORD_COST): Promise<string> {
  const salt = randomBytes(16);
  const p = params(cost);
  const key = await derive(password, salt, p);
  return ['scrypt', p.N, p.r, p.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Checks a password against a stored hash in constant time; false for a malformed hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [alg, n, r, p, salt, hash] = stored.split('$');
  if (alg !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const key = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash of a random password at `cost`: unknown emails are checked against it, so they take the same time. */
const dummies = new Map<number, Promise<string>>();
export function dummyHash(cost = DEFAULT_PASSWORD_COST): Promise<string> {
  let dummy = dummies.get(cost);
  if (!dummy) {
    dummy = hashPassword(randomBytes(18).toString('base64url'), cost);
    dummies.set(cost, dummy);
  }
  return dummy;
}

/** docs/console.md: a password has 10 to 200 code points. */
export function passwordProblem(password: string): string | undefined {
  const n = [...password].length;
  if (n < 10) return 'password must be at least 10 characters.';
  if (n > 200) return 'password must be at most 200 characters.';
  return undefined;
}
