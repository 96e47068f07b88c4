import { useMemo } from 'react';
import type { DeliverySummary } from '../../api/types';
import { periodName } from '../../lib/time';
import TimeChart, { type ChartSeries } from '../../ui/time-chart';

const SERIES = [
  { key: 'succeeded', label: 'Succeeded', stroke: '#1a7f37' },
  { key: 'failed', label: 'Failed', stroke: '#cf222e' },
  { key: 'pending', label: 'Pending', stroke: '#9a6700' },
] as const;

/**
 * Deliveries per period (succeeded, failed, pending), drawn by the console's time chart (ui/time-chart.tsx)
 * in the person's profile timezone. The numbers are also in the table under the chart, for screen
 * readers and for copying.
 */
export default function DeliveriesChart({ summary, timeZone }: { summary: DeliverySummary; timeZone: string }) {
  const times = useMemo(() => summary.series.map((b) => b.start), [summary]);
  const series = useMemo<ChartSeries[]>(
    () => SERIES.map((s) => ({ label: s.label, stroke: s.stroke, values: summary.series.map((b) => b[s.key]) })),
    [summary],
  );
  return (
    <TimeChart
      times={times}
      series={series}
      xLabel={summary.period_hours === 1 ? 'Hour' : 'Period start'}
      yLabel="Deliveries"
      timeZone={timeZone}
      zoneAt={summary.until}
      label={`Deliveries per ${periodName(summary.period_hours)} since ${summary.since}: ${summary.totals.succeeded} succeeded, ${summary.totals.failed} failed, ${summary.totals.pending} pending`}
    />
  );
}
