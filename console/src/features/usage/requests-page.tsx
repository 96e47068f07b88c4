import { type FormEvent, useId, useState } from 'react';
import { ApiError } from '../../api/client';
import type { LoggedRequest } from '../../api/types';
import { useScopedList } from '../../lib/queries';
import { useUrlFilters } from '../../lib/url-filters';
import { KeptFor, retentionOf } from '../../ui/kept-for';
import { DataTable } from '../../ui/list';
import { Badge, FilterSelect, PageHeader, Pager, Time } from '../../ui/primitives';
import { Empty, ErrorState, Loading } from '../../ui/states';

/** The failed-request log: find "why did my call fail" by request id (docs/usage.md#request-log). */
export default function RequestsPage() {
  const filters = useUrlFilters();
  const requestId = filters.get('request_id');
  const status = filters.get('status');
  const [typed, setTyped] = useState(requestId);
  const inputId = useId();
  const query: Record<string, string | undefined> = {
    request_id: requestId || undefined,
    status: status || undefined,
  };
  const list = useScopedList<LoggedRequest>('/v1/requests', query, 50, { order: null });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    filters.set('request_id', typed.trim());
  };
  const rows = list.data?.pages.flatMap((p) => p.data) ?? [];
  const days = retentionOf(list);
  const inWindow = days === undefined ? '' : ` in the last ${days === 1 ? 'day' : `${days} days`}`;
  return (
    <section>
      <PageHeader title="Failed requests">
        <p className="muted">
          Every 4xx and 5xx answer to an API key. <KeptFor days={days} /> Headers and secrets are never kept.
        </p>
      </PageHeader>
      <form className="filters" onSubmit={submit} aria-label="Find failed requests">
        <div className="filter">
          <label htmlFor={inputId}>Request id</label>
          <input id={inputId} value={typed} onChange={(e) => setTyped(e.target.value)} placeholder="req_…" />
        </div>
        <button type="submit">Find</button>
        <FilterSelect
          label="Status"
          value={status}
          options={['4xx', '5xx', '400', '401', '403', '404', '409', '429']}
          onChange={(v) => filters.set('status', v)}
        />
      </form>
      {list.isPending ? (
        <Loading what="Loading failed requests" />
      ) : list.error instanceof ApiError && list.error.status === 403 ? (
        <Empty>The request log is shown to admins and members of this workspace; ask an admin if you need it.</Empty>
      ) : list.error ? (
        <ErrorState error={list.error} retry={() => list.refetch()} />
      ) : rows.length === 0 ? (
        <Empty>
          {requestId ? `No failed request with id ${requestId}${inWindow}.` : `No failed requests${inWindow}.`}
        </Empty>
      ) : (
        <>
          <DataTable
            caption="Failed requests, newest first"
            columns={['Time', 'Status', 'Request', 'Error', 'Request id']}
          >
            {rows.map((r) => (
              <tr key={r.id}>
                <td>
                  <Time iso={r.created_at} />
                </td>
                <td>
                  <Badge tone="bad">{r.status}</Badge>
                </td>
                <td>
                  <code>
                    {r.method} {r.path}
                  </code>
                  <div className="muted">
                    key <code>{r.key_id}</code> · {r.latency_ms.toFixed(1)} ms
                  </div>
                </td>
                <td>
                  <strong>{r.error_code}</strong> {r.error_message}
                  {r.body ? (
                    <details>
                      <summary>Request body</summary>
                      <pre>{r.body}</pre>
                    </details>
                  ) : null}
                </td>
                <td>
                  <code>{r.request_id}</code>
                </td>
              </tr>
            ))}
          </DataTable>
          <Pager hasMore={list.hasNextPage} onMore={() => list.fetchNextPage()} busy={list.isFetchingNextPage} />
        </>
      )}
    </section>
  );
}
