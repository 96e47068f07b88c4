import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useScopedList, useScopedMutation } from '../../api/hooks';
import type { Resource } from '../../api/types';
import { useCurrent, usePathTo } from '../../lib/session';
import { Badge, Dialog, FilterSelect, PageHeader, Pager, Time } from '../../ui/primitives';
import { Empty, QueryView } from '../../ui/states';
import { RESOURCE_TYPES, ResourceForm } from './resource-form';

export default function ResourcesPage() {
  const { canWriteResources } = useCurrent();
  const to = usePathTo();
  const [params, setParams] = useSearchParams();
  const status = params.get('status') ?? '';
  const type = params.get('type') ?? '';
  const list = useScopedList<Resource>('/v1/resources', { status, type });
  const [open, setOpen] = useState(false);
  const create = useScopedMutation<{ name: string; type: string; metadata: Record<string, string> }, unknown>(
    'POST',
    '/v1/resources',
  );
  const setFilter = (k: string, v: string) => {
    const next = new URLSearchParams(params);
    if (v) next.set(k, v);
    else next.delete(k);
    setParams(next, { replace: true });
  };
  return (
    <section>
      <PageHeader
        title="Resources"
        actions={
          canWriteResources ? (
            <button type="button" className="primary" onClick={() => setOpen(true)}>
              New resource
            </button>
          ) : null
        }
      />
      <div className="filters">
        <FilterSelect
          label="Status"
          value={status}
          options={['active', 'archived']}
          onChange={(v) => setFilter('status', v)}
        />
        <FilterSelect label="Type" value={type} options={RESOURCE_TYPES} onChange={(v) => setFilter('type', v)} />
      </div>
      <QueryView query={list} what="Loading resources">
        {(data) => {
          const rows = data.pages.flatMap((p) => p.data);
          if (rows.length === 0) return <Empty>No resources{status || type ? ' match these filters' : ' yet'}.</Empty>;
          return (
            <>
              <p className="muted">{data.pages[0]?.meta.total ?? rows.length} in all</p>
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">Resources</caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Type</th>
                      <th scope="col">Status</th>
                      <th scope="col">Created</th>
                      <th scope="col">Updated</th>
                    </tr>
                  </thead>
                  <tbody>
                    {rows.map((r) => (
                      <tr key={r.id}>
                        <td>
                          <Link to={to(`/resources/${r.id}`)}>{r.name}</Link>
                        </td>
                        <td>{r.type}</td>
                        <td>
                          <Badge tone={r.status === 'active' ? 'good' : 'neutral'}>{r.status}</Badge>
                        </td>
                        <td>
                          <Time iso={r.created_at} />
                        </td>
                        <td>
                          <Time iso={r.updated_at} />
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
      <Dialog title="New resource" open={open} onClose={() => setOpen(false)}>
        <ResourceForm
          submitLabel="Create resource"
          error={create.error}
          busy={create.isPending}
          onCancel={() => setOpen(false)}
          onSubmit={(v) => create.mutate(v, { onSuccess: () => setOpen(false) })}
        />
      </Dialog>
    </section>
  );
}
