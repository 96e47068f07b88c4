import { Fragment, useState } from 'react';
import type { Event } from '../../api/types';
import { EVENT_TYPES } from '../../lib/closed-sets';
import { useScopedList } from '../../lib/queries';
import { useUrlFilters } from '../../lib/url-filters';
import { KeptFor, retentionOf } from '../../ui/kept-for';
import { ListTable } from '../../ui/list';
import { LiveIndicator } from '../../ui/live';
import { Badge, FilterSelect, PageHeader, Time } from '../../ui/primitives';
import { SearchBox } from '../../ui/search';

export default function EventsPage() {
  const filters = useUrlFilters();
  const event = filters.get('event');
  const resource = filters.get('resource');
  // Newest first, asked again every 5 s while the tab is visible (docs/console.md#live-updates).
  const list = useScopedList<Event>(
    '/v1/events',
    { event: event || undefined, resource_id: resource || undefined },
    50,
    { live: true },
  );
  const [openId, setOpenId] = useState<string | null>(null);
  return (
    <section>
      <PageHeader title="Events">
        <p className="muted">
          <KeptFor days={retentionOf(list)} /> The same bodies your webhooks receive. Newest first.
        </p>
        <LiveIndicator updatedAt={list.dataUpdatedAt} />
      </PageHeader>
      <div className="filters">
        <FilterSelect
          label="Event type"
          value={event}
          options={[...EVENT_TYPES]}
          onChange={(v) => filters.set('event', v)}
        />
        <SearchBox
          label="Resource id"
          hint="The events of one resource (res_…)"
          value={resource}
          onSearch={(text) => filters.set('resource', text)}
        />
      </div>
      <ListTable
        list={list}
        what="Loading events"
        empty={`No events${event || resource ? ' match these filters' : ' yet'}.`}
        caption="Events"
        columns={['Time', 'Event', 'Id', 'Payload']}
      >
        {(rows) =>
          rows.map((e) => (
            <Fragment key={e.id}>
              <tr>
                <td>
                  <Time iso={e.created_at} />
                </td>
                <td>
                  {e.event}
                  {e.test ? (
                    <>
                      {' '}
                      <Badge tone="test">test</Badge>
                    </>
                  ) : null}
                </td>
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
                </td>
              </tr>
              {openId === e.id ? (
                // The whole table's width, under its row (not squeezed into the Payload column).
                <tr className="payload-row">
                  <td colSpan={4}>
                    <pre className="code">{JSON.stringify(e, null, 2)}</pre>
                  </td>
                </tr>
              ) : null}
            </Fragment>
          ))
        }
      </ListTable>
    </section>
  );
}
