import { useState } from 'react';
import type { Delivery, DeliveryDetail, Event } from '../../api/types';
import { DELIVERY_STATUSES, EVENT_TYPES } from '../../lib/closed-sets';
import { useV1Mutation } from '../../lib/mutations';
import { useScopedList, useScopedQuery } from '../../lib/queries';
import { useCurrent } from '../../lib/session';
import { useUrlFilters } from '../../lib/url-filters';
import { KeptFor, retentionOf } from '../../ui/kept-for';
import { DataTable, ListTable } from '../../ui/list';
import { LiveIndicator } from '../../ui/live';
import { Badge, FilterSelect, Time } from '../../ui/primitives';
import { Empty, ErrorState, FormError, Loading, QueryView } from '../../ui/states';

const TONE = { succeeded: 'good', failed: 'bad', pending: 'warn', cancelled: 'neutral' } as const;

/** One endpoint's delivery log: filters in the URL, each delivery's attempts on demand, retry. */
export function DeliveryLog({ webhookId }: { webhookId: string }) {
  const filters = useUrlFilters();
  const status = filters.get('status');
  const event = filters.get('event');
  const since = filters.get('since');
  // Filters go to the server, so a long log is filtered before it is paged: the endpoint's own log
  // for status alone, GET /deliveries when an event type or a date narrows it further.
  const createdAfter = since ? new Date(`${since}T00:00:00Z`).toISOString() : undefined;
  const narrowed = Boolean(event || createdAfter);
  const list = useScopedList<Delivery>(
    narrowed ? '/v1/deliveries' : `/v1/webhooks/${webhookId}/deliveries`,
    narrowed ? { webhook_id: webhookId, status, event, created_after: createdAfter } : { status },
    50,
    // Newest first, asked again every 5 s while the tab is visible (docs/console.md#live-updates).
    { live: true },
  );
  const focused = filters.get('delivery');
  const [openId, setOpenId] = useState<string | null>(null);
  return (
    <section aria-labelledby="log-title">
      <h2 id="log-title">Delivery log</h2>
      <p className="muted">
        <KeptFor days={retentionOf(list)} />
      </p>
      <LiveIndicator updatedAt={list.dataUpdatedAt} />
      {focused ? (
        <FocusedDelivery webhookId={webhookId} deliveryId={focused} onClose={() => filters.set('delivery', '')} />
      ) : null}
      <div className="filters">
        <FilterSelect
          label="Status"
          value={status}
          options={[...DELIVERY_STATUSES]}
          onChange={(v) => filters.set('status', v)}
        />
        <FilterSelect
          label="Event type"
          value={event}
          options={[...EVENT_TYPES, 'webhook.test']}
          onChange={(v) => filters.set('event', v)}
        />
        <div className="filter">
          <label htmlFor="since-filter">Since (date, UTC)</label>
          <input id="since-filter" type="date" value={since} onChange={(e) => filters.set('since', e.target.value)} />
        </div>
      </div>
      <ListTable
        list={list}
        what="Loading deliveries"
        empty={`No deliveries${status || event || since ? ' match these filters' : ' yet'}.`}
        caption="Deliveries"
        columns={['Created', 'Event', 'Status', 'Attempts', 'Last response', 'Next retry', { hidden: 'Details' }]}
      >
        {(rows) =>
          rows.map((r) => (
            <DeliveryRow
              key={r.id}
              webhookId={webhookId}
              delivery={r}
              open={openId === r.id}
              toggle={() => setOpenId(openId === r.id ? null : r.id)}
            />
          ))
        }
      </ListTable>
    </section>
  );
}

/** `?delivery=dlv_…`: one delivery shown above the log, wherever it is in it (the overview's recent failures link here). */
function FocusedDelivery({
  webhookId,
  deliveryId,
  onClose,
}: {
  webhookId: string;
  deliveryId: string;
  onClose: () => void;
}) {
  const detail = useScopedQuery<{ data: DeliveryDetail }>(`/v1/webhooks/${webhookId}/deliveries/${deliveryId}`);
  return (
    <section className="card focused" aria-labelledby="focused-title">
      <h3 id="focused-title">
        Delivery <code>{deliveryId}</code>
      </h3>
      <QueryView query={detail} what="Loading the delivery">
        {({ data }) => (
          <>
            <p>
              <Time iso={data.created_at} /> · {data.event} · <Badge tone={TONE[data.status]}>{data.status}</Badge>
            </p>
            <Attempts webhookId={webhookId} deliveryId={data.id} eventId={data.event_id} />
          </>
        )}
      </QueryView>
      <button type="button" onClick={onClose}>
        Close
      </button>
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
  const retry = useV1Mutation('post', '/v1/webhooks/{id}/deliveries/{delivery_id}/retry');
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
                    <AttemptView attempt={a} />
                  </li>
                ))}
              </ol>
            )}
            {data.status === 'pending' ? (
              <p>
                Next retry: <Time iso={data.next_attempt_at} />
              </p>
            ) : null}
            {isAdmin && data.status !== 'pending' ? (
              <button
                type="button"
                onClick={() => retry.mutate({ params: { path: { id: webhookId, delivery_id: deliveryId } } })}
                disabled={retry.isPending}
              >
                Retry delivery
              </button>
            ) : null}
            <FormError error={retry.error} />
          </>
        )}
      </QueryView>
      <h3>Request body</h3>
      <p className="muted">The same bytes at every attempt: the event's body.</p>
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

type Attempt = DeliveryDetail['attempts'][number];

/** One attempt: when, how long, the request headers as sent, and the response (status and first 1 KiB) or the error. */
function AttemptView({ attempt: a }: { attempt: Attempt }) {
  const headers = a.request_headers ? Object.entries(a.request_headers) : null;
  return (
    <>
      <p>
        <strong>Attempt {a.number}</strong> at <Time iso={a.attempted_at} /> · {a.duration_ms} ms ·{' '}
        {a.response_status !== null ? `HTTP ${a.response_status}` : 'no response'}
        {a.error && a.error !== `HTTP ${a.response_status}` ? <span className="muted"> · {a.error}</span> : null}
      </p>
      {headers ? (
        <DataTable caption={`Request headers of attempt ${a.number}`} columns={['Request header', 'Value']}>
          {headers.map(([name, value]) => (
            <tr key={name}>
              <th scope="row">
                <code>{name}</code>
              </th>
              <td>
                <code className="wrap">{value}</code>
              </td>
            </tr>
          ))}
        </DataTable>
      ) : (
        <p className="muted">
          Request headers were not recorded for this attempt (made before the service kept them): POST with{' '}
          <code>content-type</code>, <code>webhook-id</code>, <code>webhook-timestamp</code>,{' '}
          <code>webhook-signature</code> and <code>x-service-signature</code>.
        </p>
      )}
      {a.response_body ? (
        <>
          <p>Response body (first 1 KiB):</p>
          <pre className="code">{a.response_body}</pre>
        </>
      ) : null}
    </>
  );
}
