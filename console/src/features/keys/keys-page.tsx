import { useState } from 'react';
import { useScopedMutation, useScopedQuery } from '../../api/hooks';
import type { ConsoleKey, CreatedConsoleKey } from '../../api/types';
import { useCurrent } from '../../lib/session';
import { Badge, ConfirmButton, Dialog, Field, PageHeader, SecretOnce, Time } from '../../ui/primitives';
import { Empty, FormError, QueryView } from '../../ui/states';

const SCOPES = [
  'users:read',
  'users:write',
  'resources:read',
  'resources:write',
  'events:read',
  'webhooks:read',
  'webhooks:write',
];

export default function KeysPage() {
  const { isAdmin, scope } = useCurrent();
  const keys = useScopedQuery<{ data: ConsoleKey[] }>('/keys');
  const revoke = useScopedMutation<{ _id: string }, unknown>('DELETE', (b) => `/keys/${b._id}`);
  const [open, setOpen] = useState(false);
  return (
    <section>
      <PageHeader
        title="API Keys"
        actions={
          <button type="button" className="primary" onClick={() => setOpen(true)}>
            Generate New Key
          </button>
        }
      >
        <p className="muted">
          {isAdmin ? 'Every key of this workspace, live and test.' : 'Your keys, live and test.'} A key is shown once,
          when it is made; here you see its prefix.
        </p>
      </PageHeader>
      <QueryView query={keys} what="Loading keys">
        {({ data }) =>
          data.length === 0 ? (
            <Empty>No API keys yet. Generate one to call the API.</Empty>
          ) : (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">API keys</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Environment</th>
                    <th scope="col">Prefix</th>
                    <th scope="col">Owner</th>
                    <th scope="col">Scopes</th>
                    <th scope="col">Created</th>
                    <th scope="col">Last used</th>
                    <th scope="col">Status</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((k) => (
                    <tr key={k.id}>
                      <td>{k.name}</td>
                      <td>
                        <Badge tone={k.env === 'live' ? 'good' : 'test'}>{k.env}</Badge>
                      </td>
                      <td>
                        <code>
                          svc_{k.env}_{k.prefix}…
                        </code>
                      </td>
                      <td>{k.owner_email}</td>
                      <td className="scopes">{k.scopes.length === SCOPES.length ? 'all' : k.scopes.join(', ')}</td>
                      <td>
                        <Time iso={k.created_at} />
                      </td>
                      <td>
                        <Time iso={k.last_used_at} />
                      </td>
                      <td>
                        {k.status === 'active' ? <Badge tone="good">active</Badge> : <Badge tone="bad">revoked</Badge>}
                      </td>
                      <td>
                        {k.status === 'active' ? (
                          <ConfirmButton
                            label={`Revoke ${k.name}`}
                            title="Revoke this key?"
                            message={`Requests with ${k.name} (svc_${k.env}_${k.prefix}…) will fail at once with 401 expired_token. This cannot be undone.`}
                            confirmLabel="Revoke key"
                            onConfirm={() => revoke.mutateAsync({ _id: k.id })}
                          />
                        ) : null}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryView>
      <GenerateKeyDialog open={open} onClose={() => setOpen(false)} defaultEnv={scope.env} />
    </section>
  );
}

function GenerateKeyDialog({
  open,
  onClose,
  defaultEnv,
}: {
  open: boolean;
  onClose: () => void;
  defaultEnv: 'live' | 'test';
}) {
  const create = useScopedMutation<
    { name: string; env: 'live' | 'test'; scopes: string[] },
    { data: CreatedConsoleKey }
  >('POST', '/keys');
  const close = () => {
    create.reset();
    onClose();
  };
  const made = create.data?.data;
  return (
    <Dialog title={made ? 'Your new API key' : 'Generate New Key'} open={open} onClose={close}>
      {made ? (
        <>
          <SecretOnce label="API key" value={made.key} />
          <p>Try it:</p>
          <pre className="code">{`curl ${location.origin}/v1/resources \\\n  -H "Authorization: Bearer ${made.key}"`}</pre>
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
            create.mutate({
              name: String(d.get('name')),
              env: d.get('env') === 'test' ? 'test' : 'live',
              scopes: d.getAll('scopes').map(String),
            });
          }}
        >
          <Field label="Name">{(id) => <input id={id} name="name" required maxLength={100} />}</Field>
          <Field label="Environment">
            {(id) => (
              <select id={id} name="env" defaultValue={defaultEnv}>
                <option value="live">live</option>
                <option value="test">test</option>
              </select>
            )}
          </Field>
          <fieldset>
            <legend>Scopes (your role still limits them)</legend>
            {SCOPES.map((s) => (
              <label key={s} className="check">
                <input type="checkbox" name="scopes" value={s} defaultChecked />
                {s}
              </label>
            ))}
          </fieldset>
          <FormError error={create.error} />
          <div className="actions">
            <button type="button" onClick={close}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={create.isPending}>
              Generate key
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}
