import { Link } from 'react-router';
import { useScopedQuery } from '../../api/hooks';
import type { Event, List, Resource } from '../../api/types';
import { useCurrent, usePathTo } from '../../lib/session';
import { PageHeader, Time } from '../../ui/primitives';
import { Empty, QueryView } from '../../ui/states';

export default function OverviewPage() {
  const { membership, scope } = useCurrent();
  const to = usePathTo();
  const resources = useScopedQuery<List<Resource>>('/v1/resources', { limit: '1' });
  const events = useScopedQuery<List<Event>>('/v1/events', { limit: '10' });
  return (
    <section>
      <PageHeader title="Overview">
        <p className="muted">
          {membership.workspace_name} · {scope.env === 'live' ? 'live data' : 'test data'}
        </p>
      </PageHeader>
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
        <div className="card">
          <h2>Usage and delivery health</h2>
          <p className="muted">Request charts and delivery success rates come with usage metering.</p>
        </div>
      </div>
      <h2>Recent events</h2>
      <QueryView query={events} what="Loading events">
        {(d) =>
          d.data.length === 0 ? (
            <Empty>No events yet. Create a resource to see one.</Empty>
          ) : (
            <ul className="timeline">
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
