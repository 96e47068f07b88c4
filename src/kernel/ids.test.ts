import { decodeTime, ulid as reference } from 'ulid';
import { describe, expect, it } from 'vitest';
import { isId, newId, requestIdGenerator, ulid } from './ids.js';

// Backends: sqlite — id generation, no storage
// Tier: quick

describe('ulid (pooled randomness, docs/performance.md#request-ids-and-loggers; same format as the ulid package)', () => {
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

describe('requestIdGenerator (a prefix per generator and a counter)', () => {
  it('makes distinct req_ ids in the id shape (docs/api.md#ids), in order, and a new prefix per generator', () => {
    const next = requestIdGenerator();
    const ids = Array.from({ length: 2000 }, () => next());
    for (const id of ids.slice(0, 50)) expect(id).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(isId('request', ids[0] as string)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    expect(ids[1]).toBe(`${(ids[0] as string).slice(0, -8)}00000001`);
    expect(ids[33]?.slice(-2)).toBe('11');
    const other = requestIdGenerator();
    expect(other().slice(0, 22)).not.toBe((ids[0] as string).slice(0, 22));
  });

  it('starts with the time it was made', () => {
    const at = Date.UTC(2026, 10, 23, 12, 0, 0, 0);
    expect(decodeTime(requestIdGenerator(() => at)().slice(4))).toBe(at);
  });
});
