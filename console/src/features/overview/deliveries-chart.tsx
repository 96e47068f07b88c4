import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { DeliverySummary } from '../../api/types';
import { themeColor } from '../../lib/theme';
import { periodName, zoneAbbreviation } from '../../lib/time';

const SERIES = [
  { key: 'succeeded', label: 'Succeeded', stroke: '#1a7f37' },
  { key: 'failed', label: 'Failed', stroke: '#cf222e' },
  { key: 'pending', label: 'Pending', stroke: '#9a6700' },
] as const;

/**
 * Deliveries per period (succeeded, failed, pending) drawn by uPlot on a canvas, its time axis in the
 * person's profile timezone. Loaded on its own (uPlot is the console's largest dependency). The
 * numbers are also in the table under the chart, for screen readers and for copying.
 */
export default function DeliveriesChart({ summary, timeZone }: { summary: DeliverySummary; timeZone: string }) {
  const ref = useRef<HTMLDivElement>(null);
  const zone = zoneAbbreviation(new Date(summary.until), timeZone);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const x = summary.series.map((b) => Date.parse(b.start) / 1000);
    const data: uPlot.AlignedData = [x, ...SERIES.map((s) => summary.series.map((b) => b[s.key]))];
    // The theme's colours (light or dark) when the chart is drawn.
    const axis = themeColor('--muted', '#57606a');
    const grid = themeColor('--line', '#d5d9e0');
    const chart = new uPlot(
      {
        width: Math.max(320, el.clientWidth),
        height: 240,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), timeZone),
        legend: { show: false },
        cursor: { show: true, drag: { x: false, y: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [
          {
            label: `${summary.period_hours === 1 ? 'Hour' : 'Period start'} (${zone})`,
            stroke: axis,
            grid: { stroke: grid },
          },
          { label: 'Deliveries', stroke: axis, grid: { stroke: grid } },
        ],
        series: [{}, ...SERIES.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, points: { show: false } }))],
      },
      data,
      el,
    );
    const resize = () => chart.setSize({ width: Math.max(320, el.clientWidth), height: 240 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      chart.destroy();
    };
  }, [summary, timeZone, zone]);
  return (
    <figure className="chart">
      <div
        ref={ref}
        role="img"
        aria-label={`Deliveries per ${periodName(summary.period_hours)} since ${summary.since}: ${summary.totals.succeeded} succeeded, ${summary.totals.failed} failed, ${summary.totals.pending} pending`}
      />
      <figcaption className="legend">
        {SERIES.map((s) => (
          <span key={s.key} className={`legend-item legend-${s.key}`}>
            {s.label}
          </span>
        ))}
        <span className="muted">Times in {zone}</span>
      </figcaption>
    </figure>
  );
}
