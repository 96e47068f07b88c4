/**
 * Fixed log-spaced latency buckets (docs/usage.md): bucket i counts requests that took at most
 * BUCKET_BOUNDS_MS[i] ms (and more than the bound before it); the last bucket is open-ended.
 * Bounds double from 0.25 ms, so every process and every stored period uses the same buckets
 * and they add up. Migration 010 has one column per bucket: keep BUCKET_COUNT in step.
 */
export const BUCKET_BOUNDS_MS: readonly number[] = Array.from({ length: 15 }, (_, i) => 0.25 * 2 ** i);
export const BUCKET_COUNT = BUCKET_BOUNDS_MS.length + 1;

/** The bucket a latency of `ms` falls in. */
export function bucketOf(ms: number): number {
  if (!(ms > 0.25)) return 0;
  const i = Math.ceil(Math.log2(ms / 0.25));
  return Math.min(i, BUCKET_COUNT - 1);
}

/**
 * The `q` quantile (0..1) of the latencies counted in `buckets`, interpolated linearly inside its
 * bucket; the open last bucket answers its lower bound. Null when nothing was counted.
 */
export function quantile(buckets: readonly number[], q: number): number | null {
  let total = 0;
  for (const n of buckets) total += n;
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < buckets.length; i++) {
    const n = buckets[i] ?? 0;
    if (n > 0 && seen + n >= rank) {
      const lower = i === 0 ? 0 : (BUCKET_BOUNDS_MS[i - 1] ?? 0);
      const upper = BUCKET_BOUNDS_MS[i];
      if (upper === undefined) return lower;
      return round3(lower + ((upper - lower) * (rank - seen)) / n);
    }
    seen += n;
  }
  return BUCKET_BOUNDS_MS[BUCKET_BOUNDS_MS.length - 1] ?? null;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
