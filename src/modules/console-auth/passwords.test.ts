import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { DEFAULT_PASSWORD_COST, dummyHash, hashPassword, verifyPassword } from './passwords.js';

// Backends: sqlite — hashing and checking passwords, no storage
// Tier: quick

// The test suite hashes at PASSWORD_HASH_COST=10 (vitest.config.ts); production keeps OWASP's N=2^17.
describe('console password hashes', () => {
  it("default to OWASP's scrypt parameters (N=2^17, r=8, p=1), named in the hash", async () => {
    expect(DEFAULT_PASSWORD_COST).toBe(17);
    expect(loadConfig({}).PASSWORD_HASH_COST).toBe(17);
    const hash = await hashPassword('correct horse battery');
    expect(hash.split('$').slice(0, 4)).toEqual(['scrypt', '131072', '8', '1']);
    expect(await verifyPassword('correct horse battery', hash)).toBe(true);
    expect(await verifyPassword('correct horse batterY', hash)).toBe(false);
  });

  it('a lower cost names its own N, and a hash of either cost verifies whatever the setting now is', async () => {
    const cheap = await hashPassword('correct horse battery', 10);
    expect(cheap.split('$')[1]).toBe('1024');
    expect(await verifyPassword('correct horse battery', cheap)).toBe(true);
    expect(await verifyPassword('wrong horse battery', cheap)).toBe(false);
    // The hash unknown emails are checked against has the configured cost, so both take the same time.
    expect((await dummyHash(10)).split('$')[1]).toBe('1024');
    expect((await dummyHash()).split('$')[1]).toBe('131072');
  });

  it('PASSWORD_HASH_COST outside 10..18 is refused at start with the range', () => {
    expect(() => loadConfig({ PASSWORD_HASH_COST: '9' })).toThrow(/PASSWORD_HASH_COST/);
    expect(() => loadConfig({ PASSWORD_HASH_COST: '19' })).toThrow(/PASSWORD_HASH_COST/);
    expect(loadConfig({ PASSWORD_HASH_COST: '12' }).PASSWORD_HASH_COST).toBe(12);
  });
});
