import { useState } from 'react';
import { Link } from 'react-router';
import type { Webhook } from '../../api/types';
import { type EventName, useV1Mutation } from '../../lib/mutations';
import { useScopedList } from '../../lib/queries';
import { useCurrent, usePathTo } from '../../lib/session';
import { MutationDialog } from '../../ui/forms';
import { ListTable } from '../../ui/list';
import { Field, PageHeader, SecretOnce, Time } from '../../ui/primitives';
import { fieldErrorOf } from '../../ui/states';
import { EventChoices, Health } from './webhook-actions';

export default function WebhooksPage() {
  const { isAdmin } = useCurrent();
  const to = usePathTo();
  const list = useScopedList<Webhook>('/v1/webhooks');
  const [open, setOpen] = useState(false);
  return (
    <section>
      <PageHeader
        title="Webhooks"
        actions={
          isAdmin ? (
            <button type="button" className="primary" onClick={() => setOpen(true)}>
              Add endpoint
            </button>
          ) : null
        }
      >
        <p className="muted">Endpoints that receive this environment's events, signed with their secret.</p>
      </PageHeader>
      <ListTable
        list={list}
        what="Loading webhooks"
        empty="No webhook endpoints yet."
        caption="Webhook endpoints"
        columns={['Endpoint', 'Label', 'Events', 'Status', 'Created']}
      >
        {(rows) =>
          rows.map((w) => (
            <tr key={w.id}>
              <td>
                <Link to={to(`/webhooks/${w.id}`)}>{w.url}</Link>
              </td>
              <td>{w.label ?? <span className="muted">—</span>}</td>
              <td>{w.events.join(', ')}</td>
              <td>
                <Health webhook={w} />
              </td>
              <td>
                <Time iso={w.created_at} />
              </td>
            </tr>
          ))
        }
      </ListTable>
      <CreateWebhookDialog open={open} onClose={() => setOpen(false)} />
    </section>
  );
}

function CreateWebhookDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const create = useV1Mutation('post', '/v1/webhooks');
  return (
    <MutationDialog
      title="Add endpoint"
      madeTitle="Endpoint added"
      open={open}
      onClose={onClose}
      mutation={create}
      submitLabel="Add endpoint"
      fields={['url']}
      onSubmit={(d) => {
        const label = String(d.get('label') ?? '');
        create.mutate({
          body: {
            url: String(d.get('url')),
            events: d.getAll('events').map(String) as EventName[],
            ...(label ? { label } : {}),
          },
        });
      }}
      made={({ data }) => (
        <>
          <SecretOnce label="Signing secret" value={data.secret} />
          <p>Verify each delivery's signature with this secret.</p>
        </>
      )}
    >
      <Field label="Endpoint URL" error={fieldErrorOf(create.error, 'url')}>
        {(id, described) => <input id={id} name="url" type="url" required placeholder="https://" {...described} />}
      </Field>
      <Field label="Label">{(id) => <input id={id} name="label" maxLength={255} />}</Field>
      <EventChoices />
    </MutationDialog>
  );
}
