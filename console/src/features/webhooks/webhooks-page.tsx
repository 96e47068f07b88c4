import { useState } from 'react';
import { Link } from 'react-router';
import { useScopedList, useScopedMutation } from '../../api/hooks';
import type { CreatedWebhook, Webhook } from '../../api/types';
import { useCurrent, usePathTo } from '../../lib/session';
import { Badge, Dialog, Field, PageHeader, SecretOnce, Time } from '../../ui/primitives';
import { Empty, FormError, QueryView } from '../../ui/states';
import { EventChoices } from './webhook-actions';

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
      <QueryView query={list} what="Loading webhooks">
        {(d) => {
          const rows = d.pages.flatMap((p) => p.data);
          if (rows.length === 0) return <Empty>No webhook endpoints yet.</Empty>;
          return (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Webhook endpoints</caption>
                <thead>
                  <tr>
                    <th scope="col">Endpoint</th>
                    <th scope="col">Label</th>
                    <th scope="col">Events</th>
                    <th scope="col">Status</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((w) => (
                    <tr key={w.id}>
                      <td>
                        <Link to={to(`/webhooks/${w.id}`)}>{w.url}</Link>
                      </td>
                      <td>{w.label ?? <span className="muted">—</span>}</td>
                      <td>{w.events.join(', ')}</td>
                      <td>
                        <Badge tone={w.status === 'enabled' ? 'good' : 'warn'}>{w.status}</Badge>
                      </td>
                      <td>
                        <Time iso={w.created_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          );
        }}
      </QueryView>
      <CreateWebhookDialog open={open} onClose={() => setOpen(false)} />
    </section>
  );
}

function CreateWebhookDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const create = useScopedMutation<{ url: string; events: string[]; label?: string }, { data: CreatedWebhook }>(
    'POST',
    '/v1/webhooks',
  );
  const close = () => {
    create.reset();
    onClose();
  };
  const made = create.data?.data;
  return (
    <Dialog title={made ? 'Endpoint added' : 'Add endpoint'} open={open} onClose={close}>
      {made ? (
        <>
          <SecretOnce label="Signing secret" value={made.secret} />
          <p>Verify each delivery's signature with this secret.</p>
          <div className="actions">
            <button type="button" className="primary" onClick={close}>
              Done
            </button>
          </div>
        </>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const d = new FormData(e.currentTarget);
            const events = d.getAll('events').map(String);
            const label = String(d.get('label') ?? '');
            create.mutate({ url: String(d.get('url')), events, ...(label ? { label } : {}) });
          }}
        >
          <Field label="Endpoint URL">
            {(id) => <input id={id} name="url" type="url" required placeholder="https://" />}
          </Field>
          <Field label="Label">{(id) => <input id={id} name="label" maxLength={255} />}</Field>
          <EventChoices />
          <FormError error={create.error} />
          <div className="actions">
            <button type="button" onClick={close}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={create.isPending}>
              Add endpoint
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}
