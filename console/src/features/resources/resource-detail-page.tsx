import { useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import { useScopedList, useScopedMutation, useScopedQuery } from '../../api/hooks';
import type { Event, Resource } from '../../api/types';
import { useCurrent, usePathTo } from '../../lib/session';
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
  const update = useScopedMutation<{ name: string; metadata: Record<string, string> }, unknown>(
    'PUT',
    `/v1/resources/${id}`,
  );
  const action = useScopedMutation<{ _action: string }, unknown>('POST', (b) => `/v1/resources/${id}/${b._action}`);
  const remove = useScopedMutation<undefined, unknown>('DELETE', `/v1/resources/${id}`);
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
                    onClick={() => action.mutate({ _action: r.status === 'active' ? 'archive' : 'unarchive' })}
                    disabled={action.isPending}
                  >
                    {r.status === 'active' ? 'Archive' : 'Unarchive'}
                  </button>
                  <ConfirmButton
                    label="Delete"
                    title="Delete this resource?"
                    message="The resource and its stored events are removed for good."
                    confirmLabel="Delete resource"
                    onConfirm={async () => {
                      await remove.mutateAsync(undefined);
                      navigate(to('/resources'));
                    }}
                  />
                </>
              ) : null
            }
          >
            <p>
              <code>{r.id}</code> · {r.type} ·{' '}
              <Badge tone={r.status === 'active' ? 'good' : 'neutral'}>{r.status}</Badge>
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
                update.mutate({ name: v.name, metadata: v.metadata }, { onSuccess: () => setEditing(false) })
              }
            />
          </Dialog>
        </section>
      )}
    </QueryView>
  );
}
