import { decodeTime, ulid as reference } from 'ulid';
import { describe, expect, it } from 'vitest';
import { isId, newId, ulid } from './ids.js';

describe('ulid (pooled randomness, docs/performance.md change 2; same format as the ulid package)', () => {
  it('has the ulid format and encodes the time like the reference implementation', () => {
    const now = Date.UTC(2026, 10, 22, 10, 15, 30, 123);
    const id = ulid(now + 1_000_000);
    expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(decodeTime(id)).toBe(now + 1_000_000);
    expect(id.slice(0, 10)).toBe(reference(now + 1_000_000).slice(0, 10));
  });

  it('is strictly increasing, within one millisecond and when the clock steps back', () => {
    const t = Date.now() + 5_000_000;
    const ids = [ulid(t), ulid(t), ulid(t), ulid(t - 10), ulid(t + 1)];
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('makes prefixed ids that isId recognises', () => {
    expect(isId('resource', newId('resource'))).toBe(true);
    expect(isId('request', newId('resource'))).toBe(false);
  });
});
