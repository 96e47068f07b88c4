import type { DeliveryStatus } from '../../db/types.js';

export interface RetryPolicy {
  /** Retries after the first attempt (WEBHOOK_MAX_RETRIES, docs/api.md#webhook-deliveries: 5). */
  maxRetries: number;
  /** WEBHOOK_RETRY_BASE_MS (30 s). */
  baseMs: number;
  /** WEBHOOK_RETRY_FACTOR (4). */
  factor: number;
}

/** Jitter spreads retries of one outage over ±10 % so they do not arrive as one wave. */
const JITTER = 0.1;

/** Delay before retry `n` (1-based): base × factor^(n-1), ±10 % jitter. 30 s, 2 min, 8 min, 32 min, ~2 h by default. */
export function retryDelayMs(n: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const plain = policy.baseMs * policy.factor ** (n - 1);
  return Math.round(plain * (1 - JITTER + 2 * JITTER * random()));
}

/**
 * A delivery's state after an attempt: `attemptsMade` counts this one. Success is final; a failure
 * is retried while fewer than `maxRetries` retries have run, then the delivery is `failed`.
 */
export function afterAttempt(
  attemptsMade: number,
  ok: boolean,
  policy: RetryPolicy,
  nowMs: number,
  random: () => number = Math.random,
): { status: DeliveryStatus; nextAttemptAtMs: number | null } {
  if (ok) return { status: 'succeeded', nextAttemptAtMs: null };
  const retriesMade = attemptsMade - 1;
  if (retriesMade >= policy.maxRetries) return { status: 'failed', nextAttemptAtMs: null };
  return { status: 'pending', nextAttemptAtMs: nowMs + retryDelayMs(retriesMade + 1, policy, random) };
}
