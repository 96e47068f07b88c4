import { useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import type { Event, Resource } from '../../api/types';
import { useV1Mutation } from '../../lib/mutations';
import { useScopedList, useScopedQuery } from '../../lib/queries';
import { useCurrent, usePathTo } from '../../lib/session';
import { HistoryLink } from '../../ui/history-link';
import { Badge, ConfirmButton, Dialog, PageHeader, Time } from '../../ui/primitives';
import { Empty, QueryView } from '../../ui/states';
import { ResourceForm } from './resource-form';

export default function ResourceDetailPage() {
  const { id = '' } = useParams();
  const { canWriteResources } = useCurrent();
  const to = usePathTo();
  const navigate = useNavigate();
  const resource = useScopedQuery<{ data: Resource }>(`/v1/resources/${id}`);
  const events = useScopedList<Event>('/v1/events', { resource_id: id });
  const [editing, setEditing] = useState(false);
  const path = { path: { id } };
  const update = useV1Mutation('put', '/v1/resources/{id}');
  const archive = useV1Mutation('post', '/v1/resources/{id}/archive');
  const unarchive = useV1Mutation('post', '/v1/resources/{id}/unarchive');
  const remove = useV1Mutation('delete', '/v1/resources/{id}');
  return (
    <QueryView query={resource} what="Loading the resource">
      {({ data: r }) => (
        <section>
          <PageHeader
            title={r.name}
            actions={
              canWriteResources ? (
                <>
                  <button type="button" onClick={() => setEditing(true)}>
                    Edit
                  </button>
                  <button
                    type="button"
                    onClick={() => (r.status === 'active' ? archive : unarchive).mutate({ params: path })}
                    disabled={archive.isPending || unarchive.isPending}
                  >
                    {r.status === 'active' ? 'Archive' : 'Unarchive'}
                  </button>
                  <ConfirmButton
                    label="Delete"
                    title="Delete this resource?"
                    message="The resource and its stored events are removed for good."
                    confirmLabel="Delete resource"
                    onConfirm={async () => {
                      await remove.mutateAsync({ params: path });
                      navigate(to('/resources'));
                    }}
                  />
                </>
              ) : null
            }
          >
            <p>
              <code>{r.id}</code> · {r.type} ·{' '}
              <Badge tone={r.status === 'active' ? 'good' : 'neutral'}>{r.status}</Badge>{' '}
              <HistoryLink targetId={r.id} label={r.name} />
            </p>
          </PageHeader>
          <dl className="props">
            <dt>Created</dt>
            <dd>
              <Time iso={r.created_at} />
            </dd>
            <dt>Updated</dt>
            <dd>
              <Time iso={r.updated_at} />
            </dd>
          </dl>
          <h2>Metadata</h2>
          {Object.keys(r.metadata ?? {}).length === 0 ? (
            <Empty>No metadata.</Empty>
          ) : (
            <dl className="props">
              {Object.entries(r.metadata ?? {}).map(([k, v]) => (
                <div key={k}>
                  <dt>{k}</dt>
                  <dd>{String(v)}</dd>
                </div>
              ))}
            </dl>
          )}
          <h2>Event history</h2>
          <QueryView query={events} what="Loading events">
            {(d) => {
              const rows = d.pages.flatMap((p) => p.data);
              return rows.length === 0 ? (
                <Empty>No events.</Empty>
              ) : (
                <ul className="timeline">
                  {rows.map((e) => (
                    <li key={e.id}>
                      <Time iso={e.created_at} /> <strong>{e.event}</strong> <code>{e.id}</code>
                    </li>
                  ))}
                </ul>
              );
            }}
          </QueryView>
          <Dialog title="Edit resource" open={editing} onClose={() => setEditing(false)}>
            <ResourceForm
              initial={r}
              submitLabel="Save"
              error={update.error}
              busy={update.isPending}
              onCancel={() => setEditing(false)}
              onSubmit={(v) =>
                update.mutate(
                  { params: path, body: { name: v.name, metadata: v.metadata } },
                  { onSuccess: () => setEditing(false) },
                )
              }
            />
          </Dialog>
        </section>
      )}
    </QueryView>
  );
}
