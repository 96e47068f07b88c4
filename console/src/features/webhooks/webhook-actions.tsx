import { useState } from 'react';
import type { Webhook } from '../../api/types';
import { EVENT_TYPES } from '../../lib/closed-sets';
import { type EventName, useV1Mutation } from '../../lib/mutations';
import { MutationDialog, OverlapSelect } from '../../ui/forms';
import { Badge, Field, SecretOnce, Time } from '../../ui/primitives';
import { FormError, fieldErrorOf } from '../../ui/states';

/** Edit the URL, events and label; the secret and the delivery log stay. */
export function EditWebhookDialog({
  webhook,
  open,
  onClose,
}: {
  webhook: Webhook;
  open: boolean;
  onClose: () => void;
}) {
  const save = useV1Mutation('patch', '/v1/webhooks/{id}');
  return (
    <MutationDialog
      title="Edit endpoint"
      open={open}
      onClose={onClose}
      mutation={save}
      submitLabel="Save endpoint"
      fields={['url']}
      onSubmit={(d) => {
        const label = String(d.get('label') ?? '');
        save.mutate(
          {
            params: { path: { id: webhook.id } },
            body: {
              url: String(d.get('url')),
              events: d.getAll('events').map(String) as EventName[],
              label: label || null,
            },
          },
          { onSuccess: onClose },
        );
      }}
    >
      <Field label="Endpoint URL" error={fieldErrorOf(save.error, 'url')}>
        {(id, described) => <input id={id} name="url" type="url" required defaultValue={webhook.url} {...described} />}
      </Field>
      <Field label="Label">
        {(id) => <input id={id} name="label" maxLength={255} defaultValue={webhook.label ?? ''} />}
      </Field>
      <EventChoices selected={webhook.events} />
    </MutationDialog>
  );
}

/**
 * The events an endpoint receives: all (`*`) or a choice of single types, never both (ticking `*`
 * clears the others; ticking a single type clears `*`).
 */
export function EventChoices({ selected = ['*'] }: { selected?: string[] }) {
  const [chosen, setChosen] = useState<string[]>(selected);
  const toggle = (t: string, on: boolean) => {
    if (!on) setChosen((c) => c.filter((x) => x !== t));
    else if (t === '*') setChosen(['*']);
    else setChosen((c) => [...c.filter((x) => x !== '*'), t]);
  };
  return (
    <fieldset>
      <legend>Events</legend>
      {['*', ...EVENT_TYPES].map((t) => (
        <label key={t} className="check">
          <input
            type="checkbox"
            name="events"
            value={t}
            checked={chosen.includes(t)}
            onChange={(e) => toggle(t, e.target.checked)}
          />
          {t === '*' ? 'All events (*)' : t}
        </label>
      ))}
    </fieldset>
  );
}

/** A new signing secret, shown once; the old one keeps signing during the chosen overlap. */
export function RotateSecretButton({ webhook }: { webhook: Webhook }) {
  const [open, setOpen] = useState(false);
  const rotate = useV1Mutation('post', '/v1/webhooks/{id}/rotate-secret');
  return (
    <>
      <button type="button" onClick={() => setOpen(true)}>
        Rotate secret
      </button>
      <MutationDialog
        title="Rotate signing secret"
        madeTitle="Secret rotated"
        open={open}
        onClose={() => setOpen(false)}
        mutation={rotate}
        submitLabel="Rotate"
        onSubmit={(d) =>
          rotate.mutate({ params: { path: { id: webhook.id } }, body: { expire_old_in_s: Number(d.get('overlap')) } })
        }
        made={({ data }) => <SecretOnce label="New signing secret" value={data.secret} />}
      >
        <OverlapSelect label="Keep signing with the old secret for" />
      </MutationDialog>
    </>
  );
}

/** Re-queues every failed delivery since a date (one job on the server). */
export function RetryFailedSince({ webhookId }: { webhookId: string }) {
  const retry = useV1Mutation('post', '/v1/webhooks/{id}/deliveries/retry');
  return (
    <form
      className="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        const day = String(new FormData(e.currentTarget).get('since'));
        retry.mutate({
          params: { path: { id: webhookId } },
          body: { status: 'failed', since: new Date(`${day}T00:00:00Z`).toISOString() },
        });
      }}
    >
      <Field label="Retry all failed since (date, UTC)">
        {(id) => <input id={id} name="since" type="date" required />}
      </Field>
      <button type="submit" disabled={retry.isPending}>
        Retry failed deliveries
      </button>
      {retry.data ? <p role="status">{retry.data.data.requeued} deliveries queued again.</p> : null}
      <FormError error={retry.error} />
    </form>
  );
}

/** Status with health (docs/api.md#endpoint-health): failing since when, and why it is disabled. */
export function Health({ webhook: w }: { webhook: Webhook }) {
  if (w.status === 'disabled') {
    return (
      <>
        <Badge tone="warn">{w.disabled_reason === 'failing' ? 'disabled: failing' : 'disabled'}</Badge>
        {w.disabled_reason === 'failing' && w.failing_since ? (
          <span className="muted">
            {' '}
            failing since <Time iso={w.failing_since} />
          </span>
        ) : null}
      </>
    );
  }
  if (w.failing_since) {
    return (
      <>
        <Badge tone="warn">failing</Badge>
        <span className="muted">
          {' '}
          since <Time iso={w.failing_since} />
        </span>
      </>
    );
  }
  return <Badge tone="good">enabled</Badge>;
}

/** The types "Send test event" can send (docs/api.md#test-events): `webhook.test` first, then the catalogue. */
export const TEST_EVENT_TYPES = ['webhook.test', ...EVENT_TYPES] as const;
export type TestEventType = (typeof TEST_EVENT_TYPES)[number];

/** "Send test event" with its type: `webhook.test`, or an example of a catalogue type. */
export function SendTestEvent({ disabled, onSend }: { disabled: boolean; onSend: (eventType: TestEventType) => void }) {
  const [type, setType] = useState<TestEventType>('webhook.test');
  return (
    <span className="test-event">
      <label className="visually-hidden" htmlFor="test-event-type">
        Test event type
      </label>
      <select id="test-event-type" value={type} onChange={(e) => setType(e.target.value as TestEventType)}>
        {TEST_EVENT_TYPES.map((t) => (
          <option key={t} value={t}>
            {t}
          </option>
        ))}
      </select>
      <button type="button" onClick={() => onSend(type)} disabled={disabled}>
        Send test event
      </button>
    </span>
  );
}
