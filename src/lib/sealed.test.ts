import { describe, expect, it } from 'vitest';
import { createSealer, isSealed, kidOf, kidOfKey, newSecretsKey, parseSecretsKeys, SecretsKeyError } from './sealed.js';

// Backends: sqlite — AES-256-GCM sealing with node:crypto, no storage
// Tier: quick

const keyA = Buffer.from(newSecretsKey(), 'base64');
const keyB = Buffer.from(newSecretsKey(), 'base64');
const at = { column: 'webhooks.secret', scope: 'ws_1', row: 'wh_1' };

describe('sealed values', () => {
  it('seals as v1:<kid>:<iv>:<ct>:<tag> and opens back; the clear value appears nowhere in it', () => {
    const s = createSealer([keyA]);
    const clear = 'whsec_c2VjcmV0LXZhbHVlLXRoYXQtbXVzdC1ub3QtbGVhaw==';
    const stored = s.seal(clear, at);
    expect(stored).toMatch(/^v1:[A-Za-z0-9_-]{12}:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$/);
    expect(isSealed(stored)).toBe(true);
    expect(kidOf(stored)).toBe(kidOfKey(keyA));
    expect(stored).not.toContain(clear);
    expect(stored).not.toContain(clear.slice(6, 20));
    expect(s.open(stored, at)).toBe(clear);
    // A fresh IV each time: the same secret never stores the same twice.
    expect(s.seal(clear, at)).not.toBe(stored);
  });

  it('a value moved to another row, column or workspace does not open', () => {
    const s = createSealer([keyA]);
    const stored = s.seal('whsec_x', at);
    expect(() => s.open(stored, { ...at, row: 'wh_2' })).toThrow(SecretsKeyError);
    expect(() => s.open(stored, { ...at, scope: 'ws_2' })).toThrow(SecretsKeyError);
    expect(() => s.open(stored, { ...at, column: 'webhooks.previous_secret' })).toThrow(SecretsKeyError);
    // A fresh sealer (no cache) refuses the same way, and still opens it where it belongs.
    const other = createSealer([keyA]);
    expect(() => other.open(stored, { ...at, row: 'wh_2' })).toThrow(/does not open/);
    expect(other.open(stored, at)).toBe('whsec_x');
  });

  it('an altered value does not open', () => {
    const s = createSealer([keyA]);
    const parts = s.seal('whsec_x', at).split(':');
    const ct = Buffer.from(parts[3] as string, 'base64url');
    ct[0] = (ct[0] as number) ^ 1;
    parts[3] = ct.toString('base64url');
    expect(() => createSealer([keyA]).open(parts.join(':'), at)).toThrow(SecretsKeyError);
  });

  it('several keys live: the first seals, each opens; a key not held is named, never bypassed', () => {
    const old = createSealer([keyA]).seal('whsec_old', at);
    const both = createSealer([keyB, keyA]);
    expect(both.primaryKid).toBe(kidOfKey(keyB));
    expect(both.open(old, at)).toBe('whsec_old');
    expect(kidOf(both.seal('whsec_new', at))).toBe(kidOfKey(keyB));
    expect(() => createSealer([keyB]).open(old, at)).toThrow(/SECRETS_KEY/);
  });

  it('never answers a clear stored value as if it were sealed', () => {
    expect(() => createSealer([keyA]).open('whsec_clear', at)).toThrow(SecretsKeyError);
  });

  it('parses SECRETS_KEY: base64 keys of 32 bytes, comma-separated, without echoing one', () => {
    const a = keyA.toString('base64');
    expect(parseSecretsKeys(`${a}, ${keyB.toString('base64')}`)).toHaveLength(2);
    expect(() => parseSecretsKeys('c2hvcnQ=')).toThrow(/SECRETS_KEY's key 1 is not 32 bytes/);
    try {
      parseSecretsKeys(`${a},${a.slice(0, 20)}`);
      expect.unreachable();
    } catch (e) {
      expect((e as Error).message).toMatch(/key 2/);
      expect((e as Error).message).not.toContain(a.slice(0, 20));
    }
  });
});
