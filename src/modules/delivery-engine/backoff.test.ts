import { describe, expect, it } from 'vitest';
import { afterAttempt, retryDelayMs } from './backoff.js';

// Backends: sqlite — the pure retry back-off rule
// Tier: quick

const policy = { maxRetries: 5, baseMs: 30_000, factor: 4 };

describe('retry back-off (docs/api.md#webhook-deliveries)', () => {
  it('is base × factor^(n-1): about 30 s, 2 min, 8 min, 32 min, 2 h', () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, policy, mid))).toEqual([
      30_000, 120_000, 480_000, 1_920_000, 7_680_000,
    ]);
  });

  it('jitters within ±10 %', () => {
    expect(retryDelayMs(1, policy, () => 0)).toBe(27_000);
    expect(retryDelayMs(1, policy, () => 0.999999)).toBe(33_000);
  });

  it('retries up to maxRetries times after the first attempt, then fails', () => {
    const now = 1_000;
    expect(afterAttempt(1, true, policy, now)).toEqual({ status: 'succeeded', nextAttemptAtMs: null });
    expect(afterAttempt(1, false, policy, now, () => 0.5)).toEqual({ status: 'pending', nextAttemptAtMs: 31_000 });
    expect(afterAttempt(5, false, policy, now, () => 0.5)).toEqual({ status: 'pending', nextAttemptAtMs: 7_681_000 });
    expect(afterAttempt(6, false, policy, now)).toEqual({ status: 'failed', nextAttemptAtMs: null });
    expect(afterAttempt(1, false, { ...policy, maxRetries: 0 }, now)).toEqual({
      status: 'failed',
      nextAttemptAtMs: null,
    });
  });
});
