import { lazy, Suspense, useId } from 'react';
import { Link } from 'react-router';
import { ApiError } from '../../api/client';
import type { UsageSeries } from '../../api/types';
import { useScopedQuery } from '../../lib/queries';
import { useCurrent, usePathTo } from '../../lib/session';
import { useUrlFilters } from '../../lib/url-filters';
import { DataTable } from '../../ui/list';
import { FilterSelect, PageHeader } from '../../ui/primitives';
import { Empty, ErrorState, Loading } from '../../ui/states';
import { chartData, usageQuery, WINDOWS, type Window } from './usage-data';

const UsageChart = lazy(() => import('../../ui/time-chart'));
const GROUPS = { key: 'API key', route: 'Route', status: 'Status' } as const;
type Group = keyof typeof GROUPS;

/** Requests by key, route or status over a window, with latency percentiles (docs/usage.md). */
export default function UsagePage() {
  const { scope, timeZone } = useCurrent();
  const to = usePathTo();
  const filters = useUrlFilters();
  const chosen = filters.get('window');
  const window: Window | 'custom' = chosen === 'custom' ? 'custom' : chosen in WINDOWS ? (chosen as Window) : '24h';
  const group: Group = (filters.get('group') as Group) in GROUPS ? (filters.get('group') as Group) : 'route';
  const from = filters.get('from');
  const until = filters.get('to');
  const custom = window === 'custom' && from && until ? { from: toIso(from), to: toIso(until) } : undefined;
  const query = usageQuery(window === 'custom' ? '24h' : window, custom);
  const usage = useScopedQuery<{ data: UsageSeries }>('/v1/usage', { ...query, group_by: group });
  const fromId = useId();
  const toId = useId();
  return (
    <section>
      <PageHeader title="Usage">
        <p className="muted">
          Requests made with API keys, {scope.env === 'live' ? 'live' : 'test'} environment.{' '}
          <Link to={to('/usage/requests')}>Find a failed request</Link>
        </p>
      </PageHeader>
      <div className="filters">
        <FilterSelect
          label="Period"
          value={window}
          options={[...Object.keys(WINDOWS), 'custom']}
          anyLabel={null}
          onChange={(v) => filters.set('window', v === '24h' ? '' : v)}
        />
        <FilterSelect
          label="Group by"
          value={group}
          options={Object.keys(GROUPS)}
          anyLabel={null}
          onChange={(v) => filters.set('group', v === 'route' ? '' : v)}
        />
        {window === 'custom' ? (
          <>
            <div className="filter">
              <label htmlFor={fromId}>From</label>
              <input
                id={fromId}
                type="datetime-local"
                value={from}
                onChange={(e) => filters.set('from', e.target.value)}
              />
            </div>
            <div className="filter">
              <label htmlFor={toId}>To</label>
              <input
                id={toId}
                type="datetime-local"
                value={until}
                onChange={(e) => filters.set('to', e.target.value)}
              />
            </div>
          </>
        ) : null}
      </div>
      {window === 'custom' && !custom ? (
        <Empty>Choose a start and an end.</Empty>
      ) : usage.isPending ? (
        <Loading what="Loading usage" />
      ) : usage.error instanceof ApiError && usage.error.status === 403 ? (
        <Empty>Usage is shown to admins and members of this workspace; ask an admin if you need it.</Empty>
      ) : usage.error || !usage.data ? (
        <ErrorState error={usage.error} retry={() => usage.refetch()} />
      ) : usage.data.data.series.length === 0 ? (
        <Empty>No requests in this period. Requests made with an API key show here within a few seconds.</Empty>
      ) : (
        <UsageView data={usage.data.data} group={group} timeZone={timeZone} />
      )}
    </section>
  );
}

function UsageView({ data, group, timeZone }: { data: UsageSeries; group: Group; timeZone: string }) {
  const { times, lines } = chartData(data);
  const total = data.series.reduce((n, s) => n + s.total.count, 0);
  const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);
  return (
    <>
      <Suspense fallback={<Loading what="Drawing the chart" />}>
        <UsageChart
          times={times}
          series={lines}
          yLabel="Requests"
          timeZone={timeZone}
          label={`Requests per ${data.granularity} by ${GROUPS[group].toLowerCase()}: ${total} in all`}
        />
      </Suspense>
      <DataTable
        caption={`Requests by ${GROUPS[group].toLowerCase()}`}
        columns={[GROUPS[group], 'Requests', 'Errors', 'p50', 'p95', 'p99']}
      >
        {data.series.map((s) => (
          <tr key={s.group ?? 'all'}>
            <td>
              <code>{s.group}</code>
            </td>
            <td>{s.total.count}</td>
            <td>{s.total.errors}</td>
            <td>{ms(s.total.p50_ms)}</td>
            <td>{ms(s.total.p95_ms)}</td>
            <td>{ms(s.total.p99_ms)}</td>
          </tr>
        ))}
      </DataTable>
    </>
  );
}

/** A datetime-local value (the browser's local time) as an ISO instant. */
function toIso(local: string): string {
  const t = Date.parse(local);
  return Number.isNaN(t) ? local : new Date(t).toISOString();
}
