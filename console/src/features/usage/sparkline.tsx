import type { UsageSeries } from '../../api/types';
import { useScopedQuery } from '../../lib/queries';

const DAY = 24 * 3600_000;

/** Daily request counts of every key over the last 30 days, live and test (admins and members; else empty). */
export function useKeySparklines(enabled: boolean): Map<string, number[]> {
  const to = Math.ceil(Date.now() / DAY) * DAY;
  const query = {
    from: new Date(to - 30 * DAY).toISOString(),
    to: new Date(to).toISOString(),
    granularity: 'day',
    group_by: 'key',
  };
  const live = useScopedQuery<{ data: UsageSeries }>('/v1/usage', { ...query, env: 'live' }, enabled);
  const test = useScopedQuery<{ data: UsageSeries }>('/v1/usage', { ...query, env: 'test' }, enabled);
  const out = new Map<string, number[]>();
  for (const u of [live.data?.data, test.data?.data]) {
    if (!u) continue;
    const start = Date.parse(u.from);
    for (const s of u.series) {
      const days = new Array<number>(30).fill(0);
      for (const p of s.points) {
        const i = Math.floor((Date.parse(p.t) - start) / DAY);
        if (i >= 0 && i < 30) days[i] = (days[i] ?? 0) + p.count;
      }
      if (s.group) out.set(s.group, days);
    }
  }
  return out;
}

/** A small line of daily requests, with its total as the text alternative. */
export function Sparkline({ values }: { values: number[] | undefined }) {
  if (!values) return <span className="muted">no requests</span>;
  const max = Math.max(1, ...values);
  const w = 90;
  const h = 20;
  const points = values.map(
    (v, i) => `${((i / (values.length - 1)) * w).toFixed(1)},${(h - (v / max) * h).toFixed(1)}`,
  );
  const total = values.reduce((a, b) => a + b, 0);
  return (
    <svg width={w} height={h} viewBox={`0 0 ${w} ${h}`} role="img" aria-label={`${total} requests in 30 days`}>
      <polyline points={points.join(' ')} fill="none" stroke="#0969da" strokeWidth="1.5" />
    </svg>
  );
}
