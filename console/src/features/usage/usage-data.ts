import type { UsageSeries } from '../../api/types';
import { type ChartSeries, PALETTE } from '../../ui/time-chart';

export const WINDOWS = {
  '24h': { label: 'the last 24 hours', ms: 24 * 3600_000, granularity: 'hour' },
  '7d': { label: 'the last 7 days', ms: 7 * 24 * 3600_000, granularity: 'hour' },
  '30d': { label: 'the last 30 days', ms: 30 * 24 * 3600_000, granularity: 'day' },
} as const;
export type Window = keyof typeof WINDOWS;

const STEP = { minute: 60_000, hour: 3600_000, day: 24 * 3600_000 } as const;

/** The query of GET /v1/usage for a window ending now (to the next period), or a custom range. */
export function usageQuery(window: Window, custom?: { from: string; to: string }): Record<string, string> {
  if (custom) {
    const span = Date.parse(custom.to) - Date.parse(custom.from);
    return { from: custom.from, to: custom.to, granularity: span <= 14 * 24 * 3600_000 ? 'hour' : 'day' };
  }
  const w = WINDOWS[window];
  const step = STEP[w.granularity];
  const to = Math.ceil(Date.now() / step) * step;
  return { from: new Date(to - w.ms).toISOString(), to: new Date(to).toISOString(), granularity: w.granularity };
}

/** Every period of the answer (empty ones too, at 0) and one line per series, errors optionally beside. */
export function chartData(u: UsageSeries, opts: { errors?: boolean } = {}) {
  const step = STEP[u.granularity as keyof typeof STEP] ?? STEP.hour;
  const times: string[] = [];
  for (let t = Date.parse(u.from); t < Date.parse(u.to); t += step) times.push(new Date(t).toISOString());
  const index = new Map(times.map((t, i) => [t, i]));
  const lines: ChartSeries[] = u.series.slice(0, PALETTE.length).map((s, i) => {
    const values = new Array<number>(times.length).fill(0);
    for (const p of s.points) {
      const at = index.get(p.t);
      if (at !== undefined) values[at] = p.count;
    }
    return { label: s.group ?? 'Requests', values, stroke: PALETTE[i] ?? '#000' };
  });
  if (opts.errors) {
    const values = new Array<number>(times.length).fill(0);
    for (const s of u.series)
      for (const p of s.points) {
        const at = index.get(p.t);
        if (at !== undefined) values[at] = (values[at] ?? 0) + p.errors;
      }
    lines.push({ label: 'Errors', values, stroke: '#cf222e' });
  }
  return { times, lines };
}
