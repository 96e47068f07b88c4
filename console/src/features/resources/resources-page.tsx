import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import type { Resource } from '../../api/types';
import { RESOURCE_TYPES, useV1Mutation } from '../../lib/mutations';
import { useScopedList } from '../../lib/queries';
import { useCurrent, usePathTo } from '../../lib/session';
import { useUrlFilters } from '../../lib/url-filters';
import { ListTable } from '../../ui/list';
import { Badge, Dialog, FilterSelect, PageHeader, Time } from '../../ui/primitives';
import { SearchBox } from '../../ui/search';
import { ResourceForm } from './resource-form';

/** A resource id as the API writes them: `res_` and 26 characters of Crockford base32. */
const RESOURCE_ID = /^res_[0-9A-HJKMNP-TV-Z]{26}$/i;

export default function ResourcesPage() {
  const { canWriteResources } = useCurrent();
  const to = usePathTo();
  const filters = useUrlFilters();
  const status = filters.get('status');
  const type = filters.get('type');
  const name = filters.get('name');
  const navigate = useNavigate();
  const list = useScopedList<Resource>('/v1/resources', { status, type, name_prefix: name || undefined });
  const [open, setOpen] = useState(false);
  const create = useV1Mutation('post', '/v1/resources');
  // The confirmation belongs to the workspace and environment it was made in (the live/test switch keeps this page).
  const { scope } = useCurrent();
  const [made, setMade] = useState<{ resource: Resource; ws: string; env: string } | null>(null);
  const created = made && made.ws === scope.ws && made.env === scope.env ? made.resource : null;
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
          onChange={(v) => filters.set('status', v)}
        />
        <FilterSelect label="Type" value={type} options={RESOURCE_TYPES} onChange={(v) => filters.set('type', v)} />
        <SearchBox
          label="Search resources"
          hint="Name starts with (case-sensitive), or an exact id res_…"
          value={name}
          onSearch={(text) =>
            RESOURCE_ID.test(text)
              ? navigate(to(`/resources/${text.toUpperCase().replace(/^RES_/, 'res_')}`))
              : filters.set('name', text)
          }
        />
      </div>
      {created ? (
        <p className="notice" role="status">
          Created <Link to={to(`/resources/${created.id}`)}>{created.name}</Link> (<code>{created.id}</code>).
        </p>
      ) : null}
      <ListTable
        list={list}
        what="Loading resources"
        empty={`No resources${status || type || name ? ' match these filters' : ' yet'}.`}
        caption="Resources"
        columns={['Name', 'Type', 'Status', 'Created', 'Updated']}
        showTotal
      >
        {(rows) =>
          rows.map((r) => (
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
          ))
        }
      </ListTable>
      <Dialog title="New resource" open={open} onClose={() => setOpen(false)}>
        <ResourceForm
          submitLabel="Create resource"
          error={create.error}
          busy={create.isPending}
          onCancel={() => setOpen(false)}
          onSubmit={(v) =>
            create.mutate(
              { body: v },
              {
                onSuccess: (res) => {
                  setOpen(false);
                  setMade({ resource: res.data, ws: scope.ws, env: scope.env });
                },
              },
            )
          }
        />
      </Dialog>
    </section>
  );
}
