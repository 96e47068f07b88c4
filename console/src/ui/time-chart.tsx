import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { themeColor } from '../lib/theme';
import { zoneAbbreviation } from '../lib/time';

export interface ChartSeries {
  label: string;
  values: number[];
  stroke: string;
}

/** Up to 8 distinguishable line colours, in order. */
export const PALETTE = ['#0969da', '#cf222e', '#1a7f37', '#9a6700', '#8250df', '#bf3989', '#57606a', '#0a3069'];

/**
 * The console's one chart set-up: lines over time drawn by uPlot on a canvas, in the theme's colours,
 * the time axis in the person's profile timezone (loaded on its own: uPlot is the console's largest
 * dependency). The usage pages and the overview's deliveries chart draw through it; the caller puts
 * the numbers in a table too.
 */
export default function TimeChart({
  times,
  series,
  xLabel = 'Time',
  yLabel,
  timeZone,
  zoneAt,
  label,
}: {
  /** Period starts, ISO. */
  times: string[];
  series: ChartSeries[];
  /** The time axis' name; the timezone's abbreviation follows it. */
  xLabel?: string;
  yLabel: string;
  timeZone: string;
  /** The moment whose timezone abbreviation the axis shows (default: the last period's start). */
  zoneAt?: string;
  /** The text alternative. */
  label: string;
}) {
  const ref = useRef<HTMLDivElement>(null);
  const zone = zoneAbbreviation(new Date(zoneAt ?? times[times.length - 1] ?? Date.now()), timeZone);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const data: uPlot.AlignedData = [times.map((t) => Date.parse(t) / 1000), ...series.map((s) => s.values)];
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
          { label: `${xLabel} (${zone})`, stroke: axis, grid: { stroke: grid } },
          { label: yLabel, stroke: axis, grid: { stroke: grid } },
        ],
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, points: { show: false } }))],
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
  }, [times, series, xLabel, yLabel, timeZone, zone]);
  return (
    <figure className="chart">
      <div ref={ref} role="img" aria-label={label} />
      <figcaption className="legend">
        {series.map((s) => (
          <span key={s.label} className="legend-item" style={{ borderColor: s.stroke }}>
            {s.label}
          </span>
        ))}
        <span className="muted">Times in {zone}</span>
      </figcaption>
    </figure>
  );
}
