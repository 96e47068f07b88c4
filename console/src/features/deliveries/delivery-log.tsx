import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { useScopedList, useScopedMutation, useScopedQuery } from '../../api/hooks';
import type { Delivery, DeliveryDetail, Event } from '../../api/types';
import { useCurrent } from '../../lib/session';
import { Badge, FilterSelect, Pager, Time } from '../../ui/primitives';
import { Empty, ErrorState, FormError, Loading, QueryView } from '../../ui/states';
import { EVENT_TYPES } from '../events/events-page';

const TONE = { succeeded: 'good', failed: 'bad', pending: 'warn', cancelled: 'neutral' } as const;

/** One endpoint's delivery log: filters in the URL, each delivery's attempts on demand, retry. */
export function DeliveryLog({ webhookId }: { webhookId: string }) {
  const [params, setParams] = useSearchParams();
  const status = params.get('status') ?? '';
  const event = params.get('event') ?? '';
  const since = params.get('since') ?? '';
  // Filters go to the server, so a long log is filtered before it is paged: the endpoint's own log
  // for status alone, GET /deliveries when an event type or a date narrows it further.
  const createdAfter = since ? new Date(`${since}T00:00:00Z`).toISOString() : undefined;
  const narrowed = Boolean(event || createdAfter);
  const list = useScopedList<Delivery>(
    narrowed ? '/v1/deliveries' : `/v1/webhooks/${webhookId}/deliveries`,
    narrowed ? { webhook_id: webhookId, status, event, created_after: createdAfter } : { status },
  );
  const [openId, setOpenId] = useState<string | null>(null);
  const setFilter = (k: string, v: string) => {
    const next = new URLSearchParams(params);
    if (v) next.set(k, v);
    else next.delete(k);
    setParams(next, { replace: true });
  };
  return (
    <section aria-labelledby="log-title">
      <h2 id="log-title">Delivery log</h2>
      <div className="filters">
        <FilterSelect
          label="Status"
          value={status}
          options={['pending', 'succeeded', 'failed', 'cancelled']}
          onChange={(v) => setFilter('status', v)}
        />
        <FilterSelect
          label="Event type"
          value={event}
          options={[...EVENT_TYPES, 'webhook.test']}
          onChange={(v) => setFilter('event', v)}
        />
        <div className="filter">
          <label htmlFor="since-filter">Since (date, UTC)</label>
          <input id="since-filter" type="date" value={since} onChange={(e) => setFilter('since', e.target.value)} />
        </div>
      </div>
      <QueryView query={list} what="Loading deliveries">
        {(d) => {
          const rows = d.pages.flatMap((p) => p.data);
          if (rows.length === 0)
            return <Empty>No deliveries{status || event || since ? ' match these filters' : ' yet'}.</Empty>;
          return (
            <>
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">Deliveries</caption>
                  <thead>
                    <tr>
                      <th scope="col">Created</th>
                      <th scope="col">Event</th>
                      <th scope="col">Status</th>
                      <th scope="col">Attempts</th>
                      <th scope="col">Last response</th>
                      <th scope="col">Next retry</th>
                      <th scope="col">
                        <span className="visually-hidden">Details</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((r) => (
                      <DeliveryRow
                        key={r.id}
                        webhookId={webhookId}
                        delivery={r}
                        open={openId === r.id}
                        toggle={() => setOpenId(openId === r.id ? null : r.id)}
                      />
                    ))}
                  </tbody>
                </table>
              </div>
              <Pager hasMore={list.hasNextPage} busy={list.isFetchingNextPage} onMore={() => list.fetchNextPage()} />
            </>
          );
        }}
      </QueryView>
    </section>
  );
}

function DeliveryRow({
  webhookId,
  delivery: r,
  open,
  toggle,
}: {
  webhookId: string;
  delivery: Delivery;
  open: boolean;
  toggle: () => void;
}) {
  return (
    <>
      <tr>
        <td>
          <Time iso={r.created_at} />
        </td>
        <td>{r.event}</td>
        <td>
          <Badge tone={TONE[r.status]}>{r.status}</Badge>
        </td>
        <td>{r.attempt_count}</td>
        <td>{r.last_response_status ?? r.last_error ?? <span className="muted">—</span>}</td>
        <td>
          <Time iso={r.next_attempt_at} />
        </td>
        <td>
          <button type="button" aria-expanded={open} aria-label={`Attempts of ${r.id}`} onClick={toggle}>
            {open ? 'Hide attempts' : 'Attempts'}
          </button>
        </td>
      </tr>
      {open ? (
        <tr className="detail-row">
          <td colSpan={7}>
            <Attempts webhookId={webhookId} deliveryId={r.id} eventId={r.event_id} />
          </td>
        </tr>
      ) : null}
    </>
  );
}

function Attempts({ webhookId, deliveryId, eventId }: { webhookId: string; deliveryId: string; eventId: string }) {
  const { isAdmin } = useCurrent();
  const detail = useScopedQuery<{ data: DeliveryDetail }>(`/v1/webhooks/${webhookId}/deliveries/${deliveryId}`);
  const event = useScopedQuery<{ data: Event }>(`/v1/events/${eventId}`);
  const retry = useScopedMutation<undefined, unknown>(
    'POST',
    `/v1/webhooks/${webhookId}/deliveries/${deliveryId}/retry`,
  );
  return (
    <div className="attempts">
      <QueryView query={detail} what="Loading attempts">
        {({ data }) => (
          <>
            {data.attempts.length === 0 ? (
              <Empty>No attempt yet.</Empty>
            ) : (
              <ol>
                {data.attempts.map((a) => (
                  <li key={a.number}>
                    Attempt {a.number} at <Time iso={a.attempted_at} /> · {a.duration_ms} ms ·{' '}
                    {a.response_status !== null ? `HTTP ${a.response_status}` : 'no response'}
                    {a.error ? <span className="muted"> · {a.error}</span> : null}
                    {a.response_body ? <pre className="code">{a.response_body}</pre> : null}
                  </li>
                ))}
              </ol>
            )}
            {isAdmin && data.status !== 'pending' ? (
              <button type="button" onClick={() => retry.mutate(undefined)} disabled={retry.isPending}>
                Retry delivery
              </button>
            ) : null}
            <FormError error={retry.error} />
          </>
        )}
      </QueryView>
      <h3>Request body</h3>
      <p className="muted">
        POST with headers <code>content-type: application/json</code>, <code>webhook-id</code>,{' '}
        <code>webhook-timestamp</code>, <code>webhook-signature</code> and <code>X-Service-Signature</code>.
      </p>
      {event.isPending ? (
        <Loading what="Loading the body" />
      ) : event.error ? (
        <ErrorState error={event.error} />
      ) : (
        <pre className="code">{JSON.stringify(event.data?.data, null, 2)}</pre>
      )}
    </div>
  );
}
