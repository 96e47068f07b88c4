import { useState } from 'react';
import { useSearchParams } from 'react-router';
import type { Event } from '../../api/types';
import { EVENT_TYPES } from '../../lib/closed-sets';
import { useScopedList } from '../../lib/queries';
import { ListTable } from '../../ui/list';
import { FilterSelect, PageHeader, Time } from '../../ui/primitives';

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
          options={[...EVENT_TYPES]}
          onChange={(v) => setParams(v ? { event: v } : {}, { replace: true })}
        />
      </div>
      <ListTable
        list={list}
        what="Loading events"
        empty={`No events${event ? ' of this type' : ' yet'}.`}
        caption="Events"
        columns={['Time', 'Event', 'Id', 'Payload']}
      >
        {(rows) =>
          rows.map((e) => (
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
          ))
        }
      </ListTable>
    </section>
  );
}
