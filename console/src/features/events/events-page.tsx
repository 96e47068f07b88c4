import { useState } from 'react';
import { useSearchParams } from 'react-router';
import { useScopedList } from '../../api/hooks';
import type { Event } from '../../api/types';
import { FilterSelect, PageHeader, Pager, Time } from '../../ui/primitives';
import { Empty, QueryView } from '../../ui/states';

export const EVENT_TYPES = ['resource.created', 'resource.updated', 'resource.status_changed', 'resource.deleted'];

export default function EventsPage() {
  const [params, setParams] = useSearchParams();
  const event = params.get('event') ?? '';
  const list = useScopedList<Event>('/v1/events', { event });
  const [openId, setOpenId] = useState<string | null>(null);
  return (
    <section>
      <PageHeader title="Events">
        <p className="muted">Kept 30 days; the same bodies your webhooks receive.</p>
      </PageHeader>
      <div className="filters">
        <FilterSelect
          label="Event type"
          value={event}
          options={EVENT_TYPES}
          onChange={(v) => setParams(v ? { event: v } : {}, { replace: true })}
        />
      </div>
      <QueryView query={list} what="Loading events">
        {(d) => {
          const rows = d.pages.flatMap((p) => p.data);
          if (rows.length === 0) return <Empty>No events{event ? ' of this type' : ' yet'}.</Empty>;
          return (
            <>
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">Events</caption>
                  <thead>
                    <tr>
                      <th scope="col">Time</th>
                      <th scope="col">Event</th>
                      <th scope="col">Id</th>
                      <th scope="col">Payload</th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((e) => (
                      <tr key={e.id}>
                        <td>
                          <Time iso={e.created_at} />
                        </td>
                        <td>{e.event}</td>
                        <td>
                          <code>{e.id}</code>
                        </td>
                        <td>
                          <button
                            type="button"
                            aria-expanded={openId === e.id}
                            onClick={() => setOpenId(openId === e.id ? null : e.id)}
                          >
                            {openId === e.id ? 'Hide payload' : 'Show payload'}
                          </button>
                          {openId === e.id ? <pre className="code">{JSON.stringify(e, null, 2)}</pre> : null}
                        </td>
                      </tr>
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
