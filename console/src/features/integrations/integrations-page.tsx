import { useState } from 'react';
import type { Integration, IntegrationMessageItem, Platform } from '../../api/types';
import { CHAT_SUBSCRIBABLE_EVENTS, FEED_CATEGORIES } from '../../lib/closed-sets';
import { useScopedMutation, useScopedQuery } from '../../lib/queries';
import { useCurrent } from '../../lib/session';
import { MutationDialog } from '../../ui/forms';
import { DataTable } from '../../ui/list';
import { Badge, ConfirmButton, Dialog, Field, PageHeader, Time } from '../../ui/primitives';
import { Empty, FormError, fieldErrorOf, QueryView } from '../../ui/states';

// Slack and Discord integrations (docs/integrations.md): admins connect, test, read the log, delete.
const KIND_NAME: Record<Platform, string> = { slack: 'Slack', discord: 'Discord' };

export default function IntegrationsPage() {
  const { isAdmin } = useCurrent();
  const [connecting, setConnecting] = useState<Platform | null>(null);
  const [logOf, setLogOf] = useState<Integration | null>(null);
  if (!isAdmin) {
    return (
      <section>
        <PageHeader title="Integrations" />
        <Empty>Only workspace admins manage integrations.</Empty>
      </section>
    );
  }
  return (
    <section>
      <PageHeader
        title="Integrations"
        actions={
          <>
            <button type="button" className="primary" onClick={() => setConnecting('slack')}>
              Connect Slack
            </button>{' '}
            <button type="button" className="primary" onClick={() => setConnecting('discord')}>
              Connect Discord
            </button>
          </>
        }
      >
        <p className="muted">
          Post resource events of one environment and notifications to a Slack or Discord channel through its incoming
          webhook.
        </p>
      </PageHeader>
      <IntegrationList onLog={setLogOf} />
      <ConnectDialog kind={connecting} onClose={() => setConnecting(null)} />
      <Dialog
        title={logOf ? `Messages to ${KIND_NAME[logOf.kind]} (${logOf.url_hint})` : 'Messages'}
        open={logOf !== null}
        onClose={() => setLogOf(null)}
      >
        {logOf ? <MessageLog integration={logOf} /> : null}
        <div className="actions">
          <button type="button" onClick={() => setLogOf(null)}>
            Close
          </button>
        </div>
      </Dialog>
    </section>
  );
}

function IntegrationList({ onLog }: { onLog: (i: Integration) => void }) {
  const list = useScopedQuery<{ data: Integration[] }>('/integrations');
  const update = useScopedMutation<{ _id: string; status: 'enabled' | 'disabled' }, unknown>(
    'PATCH',
    (b) => `/integrations/${b._id}`,
  );
  const test = useScopedMutation<{ _id: string }, { data: IntegrationMessageItem }>(
    'POST',
    (b) => `/integrations/${b._id}/test`,
  );
  const remove = useScopedMutation<{ _id: string }, unknown>('DELETE', (b) => `/integrations/${b._id}`);
  return (
    <QueryView query={list} what="Loading integrations">
      {({ data }) =>
        data.length === 0 ? (
          <Empty>No integrations yet. Connect Slack or Discord to post events and notifications to a channel.</Empty>
        ) : (
          <>
            <FormError error={update.error ?? test.error} />
            {test.isSuccess ? <p role="status">Test message queued; it appears in the message log once sent.</p> : null}
            <DataTable
              caption="Integrations"
              columns={[
                'Destination',
                'Status',
                'Environment',
                'Events',
                'Notifications',
                'Created',
                { hidden: 'Actions' },
              ]}
            >
              {data.map((i) => {
                const name = `${KIND_NAME[i.kind]} ${i.url_hint}`;
                return (
                  <tr key={i.id}>
                    <td>
                      <strong>{KIND_NAME[i.kind]}</strong> <span className="muted">{i.url_hint}</span>
                    </td>
                    <td>
                      <Badge>{i.status}</Badge>
                    </td>
                    <td>{i.env}</td>
                    <td>{i.events.length === 0 ? <span className="muted">none</span> : i.events.join(', ')}</td>
                    <td>{i.categories.length === 0 ? <span className="muted">none</span> : i.categories.join(', ')}</td>
                    <td>
                      <Time iso={i.created_at} />
                    </td>
                    <td>
                      <button
                        type="button"
                        aria-label={`Send a test message to ${name}`}
                        disabled={test.isPending}
                        onClick={() => test.mutate({ _id: i.id })}
                      >
                        Send test
                      </button>{' '}
                      <button type="button" aria-label={`Message log of ${name}`} onClick={() => onLog(i)}>
                        Log
                      </button>{' '}
                      <button
                        type="button"
                        aria-label={`${i.status === 'enabled' ? 'Disable' : 'Enable'} ${name}`}
                        disabled={update.isPending}
                        onClick={() =>
                          update.mutate({ _id: i.id, status: i.status === 'enabled' ? 'disabled' : 'enabled' })
                        }
                      >
                        {i.status === 'enabled' ? 'Disable' : 'Enable'}
                      </button>{' '}
                      <ConfirmButton
                        label="Delete"
                        ariaLabel={`Delete ${name}`}
                        title="Delete this integration?"
                        message={`Nothing more is posted to ${name}; its message log is deleted too.`}
                        confirmLabel="Delete integration"
                        onConfirm={() => remove.mutateAsync({ _id: i.id })}
                      />
                    </td>
                  </tr>
                );
              })}
            </DataTable>
          </>
        )
      }
    </QueryView>
  );
}

interface CreateBody {
  kind: Platform;
  url: string;
  env: string;
  events: string[];
  categories: string[];
}

function ConnectDialog({ kind, onClose }: { kind: Platform | null; onClose: () => void }) {
  const create = useScopedMutation<CreateBody, { data: Integration }>('POST', '/integrations');
  const { scope } = useCurrent();
  const name = kind ? KIND_NAME[kind] : '';
  const example = kind === 'discord' ? 'https://discord.com/api/webhooks/…' : 'https://hooks.slack.com/services/…';
  return (
    <MutationDialog
      title={`Connect ${name}`}
      madeTitle={`${name} connected`}
      open={kind !== null}
      onClose={onClose}
      mutation={create}
      submitLabel="Connect"
      fields={['url', 'events']}
      onSubmit={(d) =>
        create.mutate({
          kind: kind ?? 'slack',
          url: String(d.get('url')),
          env: String(d.get('env')),
          events: d.getAll('events').map(String),
          categories: d.getAll('categories').map(String),
        })
      }
      made={({ data }) => (
        <p>Connected to {data.url_hint}. Use “Send test” to check that messages arrive in the channel.</p>
      )}
    >
      <Field label="Webhook URL" hint={`It must look like ${example}`} error={fieldErrorOf(create.error, 'url')}>
        {(id, described) => <input id={id} name="url" type="url" required placeholder={example} {...described} />}
      </Field>
      <Field label="Environment of the events">
        {(id) => (
          <select id={id} name="env" defaultValue={scope.env}>
            <option value="live">live</option>
            <option value="test">test</option>
          </select>
        )}
      </Field>
      <fieldset>
        <legend>Resource events</legend>
        {CHAT_SUBSCRIBABLE_EVENTS.map((e) => (
          <label key={e} className="check">
            <input type="checkbox" name="events" value={e} /> {e === '*' ? 'all events (*)' : e}
          </label>
        ))}
        {fieldErrorOf(create.error, 'events') ? (
          <small className="form-error field-error" role="alert">
            {fieldErrorOf(create.error, 'events')}
          </small>
        ) : null}
      </fieldset>
      <fieldset>
        <legend>Notification categories</legend>
        {FEED_CATEGORIES.map((c) => (
          <label key={c} className="check">
            <input type="checkbox" name="categories" value={c} /> {c}
          </label>
        ))}
      </fieldset>
    </MutationDialog>
  );
}

function MessageLog({ integration }: { integration: Integration }) {
  const log = useScopedQuery<{ data: IntegrationMessageItem[] }>(`/integrations/${integration.id}/messages`);
  return (
    <QueryView query={log} what="Loading messages">
      {({ data }) =>
        data.length === 0 ? (
          <Empty>No messages yet.</Empty>
        ) : (
          <DataTable caption="Messages" columns={['Created', 'What', 'Status', 'Attempts', 'Response', 'Next attempt']}>
            {data.map((m) => (
              <tr key={m.id}>
                <td>
                  <Time iso={m.created_at} />
                </td>
                <td>
                  {m.source}: {m.type}
                </td>
                <td>
                  <Badge>{m.status}</Badge>
                </td>
                <td>{m.attempt_count}</td>
                <td>
                  {m.last_response_status ?? m.last_error ?? <span className="muted">—</span>}
                  {m.last_response_excerpt ? <span className="muted"> {m.last_response_excerpt}</span> : null}
                </td>
                <td>{m.next_attempt_at ? <Time iso={m.next_attempt_at} /> : <span className="muted">—</span>}</td>
              </tr>
            ))}
          </DataTable>
        )
      }
    </QueryView>
  );
}
