import { lazy, Suspense } from 'react';
import { Link } from 'react-router';
import { ApiError } from '../../api/client';
import type { DeliverySummary, Event, List, Resource, Subscription, UsageSeries } from '../../api/types';
import { useScopedQuery } from '../../lib/queries';
import { useCurrent, usePathTo } from '../../lib/session';
import { periodName } from '../../lib/time';
import { useUrlFilters } from '../../lib/url-filters';
import { DataTable } from '../../ui/list';
import { LiveIndicator } from '../../ui/live';
import { Badge, FilterSelect, PageHeader, Time } from '../../ui/primitives';
import { Empty, ErrorState, Loading, QueryView } from '../../ui/states';
import { chartData, usageQuery } from '../usage/usage-data';
import { SetupChecklist } from './setup-checklist';

// uPlot is the console's largest dependency: its chunk loads only when there is something to draw.
const DeliveriesChart = lazy(() => import('./deliveries-chart'));
const UsageChart = lazy(() => import('../../ui/time-chart'));

const WINDOWS = { '24h': 'the last 24 hours', '7d': 'the last 7 days', '30d': 'the last 30 days' } as const;
type Window = keyof typeof WINDOWS;

export default function OverviewPage() {
  const { membership, scope, isAdmin } = useCurrent();
  const to = usePathTo();
  const filters = useUrlFilters();
  const chosen = filters.get('window');
  const window: Window = chosen in WINDOWS ? (chosen as Window) : '24h';
  // Every number here is asked again every 5 s while the tab is visible (docs/console.md#live-updates).
  const live = { live: true };
  const resources = useScopedQuery<List<Resource>>('/v1/resources', { limit: '1' }, true, live);
  // The 10 newest events.
  const events = useScopedQuery<List<Event>>('/v1/events', { limit: '10', order: 'desc' }, true, live);
  // Webhook deliveries need webhooks:read, which only admins have (src/kernel/scopes.ts):
  // the others see a note instead of a 403 they can do nothing about.
  const summary = useScopedQuery<{ data: DeliverySummary }>('/v1/deliveries/summary', { window }, isAdmin, live);
  // Viewers have no usage:read: their overview leaves requests out instead of showing an error.
  const canSeeUsage = membership.role !== 'viewer';
  const usage = useScopedQuery<{ data: UsageSeries }>('/v1/usage', usageQuery(window), canSeeUsage, live);
  // The plan-usage card: billing is admins' (billing:read).
  const plan = useScopedQuery<{ data: Subscription }>('/v1/billing/subscription', {}, isAdmin);
  return (
    <section>
      <PageHeader title="Overview">
        <p className="muted">
          {membership.workspace_name} · {scope.env === 'live' ? 'live data' : 'test data'}
        </p>
        <LiveIndicator updatedAt={events.dataUpdatedAt} />
      </PageHeader>
      <SetupChecklist key={`${scope.ws}:${scope.env}`} />
      <div className="cards">
        <div className="card">
          <h2>Resources</h2>
          <QueryView query={resources} what="Counting">
            {(d) => (
              <p className="big">
                <Link to={to('/resources')}>{d.meta.total}</Link>
              </p>
            )}
          </QueryView>
        </div>
        {isAdmin ? (
          <div className="card">
            <h2>Delivery success rate</h2>
            <QueryView query={summary} what="Counting deliveries">
              {({ data }) => (
                <>
                  <p className="big">
                    {data.success_rate === null ? '—' : `${(data.success_rate * 100).toFixed(1)} %`}
                  </p>
                  <p className="muted">
                    {data.totals.succeeded} succeeded, {data.totals.failed} failed, {data.totals.pending} pending in{' '}
                    {WINDOWS[window]}
                  </p>
                </>
              )}
            </QueryView>
          </div>
        ) : null}
        {isAdmin ? (
          <div className="card">
            <h2>Plan usage</h2>
            <QueryView query={plan} what="Loading the plan">
              {({ data }) => (
                <>
                  <p className="big">
                    <Link to={to('/settings/billing', 'live')}>
                      {data.usage.billable_requests.toLocaleString('en-US')}
                    </Link>
                    <span className="muted">
                      {' '}
                      /{' '}
                      {data.usage.included_requests === null
                        ? 'unlimited'
                        : data.usage.included_requests.toLocaleString('en-US')}
                    </span>
                  </p>
                  <p className="muted">
                    Live requests on the {data.plan.name} plan this period; it ends{' '}
                    <Time iso={data.current_period.end} />.
                  </p>
                </>
              )}
            </QueryView>
          </div>
        ) : null}
        {canSeeUsage ? (
          <div className="card">
            <h2>API requests</h2>
            <QueryView query={usage} what="Counting requests">
              {({ data }) => {
                const count = data.series.reduce((n, s) => n + s.total.count, 0);
                const errors = data.series.reduce((n, s) => n + s.total.errors, 0);
                return (
                  <>
                    <p className="big">
                      <Link to={to('/usage')}>{count}</Link>
                    </p>
                    <p className="muted">
                      {errors} errors ({count === 0 ? '0' : ((errors / count) * 100).toFixed(1)} %) in {WINDOWS[window]}
                    </p>
                  </>
                );
              }}
            </QueryView>
          </div>
        ) : null}
      </div>
      {canSeeUsage ? (
        <section aria-labelledby="requests-title">
          <h2 id="requests-title">API requests and errors over time</h2>
          <RequestsOverTime usage={usage} window={window} />
        </section>
      ) : null}
      {isAdmin ? (
        <section aria-labelledby="deliveries-title">
          <div className="section-header">
            <h2 id="deliveries-title">Webhook deliveries over time</h2>
            <div className="filters">
              <FilterSelect
                label="Period"
                value={window}
                options={Object.keys(WINDOWS)}
                anyLabel={null}
                onChange={(v) => filters.set('window', v === '24h' ? '' : v)}
              />
            </div>
          </div>
          <QueryView query={summary} what="Loading deliveries">
            {({ data }) => <DeliveryHealth summary={data} window={window} />}
          </QueryView>
        </section>
      ) : (
        <p className="muted note">Webhook deliveries are shown to admins; ask one if you need them.</p>
      )}
      <h2>Recent events</h2>
      <QueryView query={events} what="Loading events">
        {(d) =>
          d.data.length === 0 ? (
            <Empty>No events yet. Create a resource to see one.</Empty>
          ) : (
            <ul className="timeline" aria-label="Recent events, newest first">
              {d.data.map((e) => (
                <li key={e.id}>
                  <Time iso={e.created_at} /> <strong>{e.event}</strong> <code>{e.id}</code>
                </li>
              ))}
            </ul>
          )
        }
      </QueryView>
    </section>
  );
}

/** Requests and errors per period of the window, or why there is nothing to draw. */
function RequestsOverTime({
  usage,
  window,
}: {
  usage: { isPending: boolean; error: unknown; data: { data: UsageSeries } | undefined; refetch: () => unknown };
  window: Window;
}) {
  const { timeZone } = useCurrent();
  if (usage.isPending) return <Loading what="Loading requests" />;
  if (usage.error instanceof ApiError && usage.error.status === 403) return null;
  if (usage.error || !usage.data) return <ErrorState error={usage.error} retry={() => usage.refetch()} />;
  const data = usage.data.data;
  if (data.series.length === 0) return <Empty>No API requests in {WINDOWS[window]}.</Empty>;
  const { times, lines } = chartData(data, { errors: true });
  return (
    <Suspense fallback={<Loading what="Drawing the chart" />}>
      <UsageChart
        times={times}
        series={lines}
        yLabel="Requests"
        timeZone={timeZone}
        label={`API requests and errors per ${data.granularity} in ${WINDOWS[window]}`}
      />
    </Suspense>
  );
}

/** The chart (or its empty state), the hours with deliveries as a table, and the newest failures. */
function DeliveryHealth({ summary, window }: { summary: DeliverySummary; window: Window }) {
  const { timeZone } = useCurrent();
  const to = usePathTo();
  const per = periodName(summary.period_hours);
  const busy = summary.series.filter((b) => b.succeeded + b.failed + b.pending + b.cancelled > 0);
  return (
    <>
      {busy.length === 0 ? (
        <Empty>No webhook deliveries in {WINDOWS[window]}.</Empty>
      ) : (
        <>
          <Suspense fallback={<Loading what="Drawing the chart" />}>
            <DeliveriesChart summary={summary} timeZone={timeZone} />
          </Suspense>
          <details>
            <summary>The numbers, per {per}</summary>
            <DataTable
              caption={`Deliveries per ${per}`}
              columns={[summary.period_hours === 1 ? 'Hour' : 'From', 'Succeeded', 'Failed', 'Pending', 'Cancelled']}
            >
              {busy.map((b) => (
                <tr key={b.start}>
                  <td>
                    <Time iso={b.start} />
                  </td>
                  <td>{b.succeeded}</td>
                  <td>{b.failed}</td>
                  <td>{b.pending}</td>
                  <td>{b.cancelled}</td>
                </tr>
              ))}
            </DataTable>
          </details>
        </>
      )}
      <h3>Recent failures</h3>
      {summary.recent_failures.length === 0 ? (
        <Empty>No failed deliveries.</Empty>
      ) : (
        <ul className="timeline">
          {summary.recent_failures.map((d) => (
            <li key={d.id}>
              <Time iso={d.created_at} /> <Badge tone="bad">failed</Badge> <strong>{d.event}</strong>{' '}
              <Link to={to(`/webhooks/${d.webhook_id}?delivery=${d.id}`)} aria-label={`Delivery ${d.id}`}>
                {d.id}
              </Link>{' '}
              <span className="muted">{d.last_response_status ?? d.last_error ?? ''}</span>
            </li>
          ))}
        </ul>
      )}
    </>
  );
}
