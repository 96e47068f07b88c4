import { useState } from 'react';
import { useNavigate, useParams } from 'react-router';
import type { Webhook } from '../../api/types';
import { useV1Mutation } from '../../lib/mutations';
import { useScopedQuery } from '../../lib/queries';
import { useCurrent, usePathTo } from '../../lib/session';
import { HistoryLink } from '../../ui/history-link';
import { ConfirmButton, PageHeader, Time } from '../../ui/primitives';
import { FormError, QueryView } from '../../ui/states';
import { DeliveryLog } from '../deliveries/delivery-log';
import { EditWebhookDialog, Health, RetryFailedSince, RotateSecretButton, SendTestEvent } from './webhook-actions';

export default function WebhookDetailPage() {
  const { id = '' } = useParams();
  const { isAdmin } = useCurrent();
  const to = usePathTo();
  const navigate = useNavigate();
  const webhook = useScopedQuery<{ data: Webhook }>(`/v1/webhooks/${id}`);
  const path = { path: { id } };
  const remove = useV1Mutation('delete', '/v1/webhooks/{id}');
  const enable = useV1Mutation('post', '/v1/webhooks/{id}/enable');
  const disable = useV1Mutation('post', '/v1/webhooks/{id}/disable');
  const test = useV1Mutation('post', '/v1/webhooks/{id}/test');
  const [editing, setEditing] = useState(false);
  return (
    <QueryView query={webhook} what="Loading the endpoint">
      {({ data: w }) => (
        <section>
          <PageHeader
            title={w.label ?? 'Webhook endpoint'}
            actions={
              isAdmin ? (
                <>
                  <button type="button" onClick={() => setEditing(true)}>
                    Edit
                  </button>
                  {w.status === 'enabled' ? (
                    <ConfirmButton
                      label="Disable"
                      title="Disable this endpoint?"
                      message="Its pending deliveries are cancelled, and events recorded while it is disabled are not sent to it. You can enable it again, and re-queue the cancelled deliveries, later."
                      confirmLabel="Disable endpoint"
                      onConfirm={() => disable.mutateAsync({ params: path })}
                    />
                  ) : (
                    <ConfirmButton
                      label="Enable"
                      title="Enable this endpoint?"
                      message="New events are sent to it again, and its health starts afresh: it is disabled again only after every attempt fails for the whole window once more. Deliveries cancelled while it was disabled stay cancelled (the API's bulk retry with status cancelled queues them again)."
                      confirmLabel="Enable endpoint"
                      danger={false}
                      onConfirm={() => enable.mutateAsync({ params: path })}
                    />
                  )}
                  <RotateSecretButton webhook={w} />
                  <SendTestEvent
                    disabled={test.isPending || w.status !== 'enabled'}
                    onSend={(eventType) => test.mutate({ params: path, body: { event_type: eventType } })}
                  />
                  <ConfirmButton
                    label="Delete endpoint"
                    title="Delete this endpoint?"
                    message="It stops receiving events at once; its delivery log is removed."
                    confirmLabel="Delete endpoint"
                    onConfirm={async () => {
                      await remove.mutateAsync({ params: path });
                      navigate(to('/webhooks'));
                    }}
                  />
                </>
              ) : null
            }
          >
            <p>
              <code>{w.url}</code> <Health webhook={w} /> <HistoryLink targetId={w.id} label={w.label ?? w.id} />
            </p>
          </PageHeader>
          <FormError error={enable.error ?? test.error} />
          {test.data ? (
            <p className="notice" role="status">
              Test event queued as <code>{test.data.data.id}</code> (<code>{test.data.data.event}</code>); it is the
              newest row of the log below, which updates by itself.
            </p>
          ) : null}
          <dl className="props">
            <dt>Id</dt>
            <dd>
              <code>{w.id}</code>
            </dd>
            <dt>Events</dt>
            <dd>{w.events.join(', ')}</dd>
            <dt>Created</dt>
            <dd>
              <Time iso={w.created_at} />
            </dd>
          </dl>
          {isAdmin ? <RetryFailedSince webhookId={w.id} /> : null}
          <DeliveryLog webhookId={w.id} />
          <EditWebhookDialog webhook={w} open={editing} onClose={() => setEditing(false)} />
        </section>
      )}
    </QueryView>
  );
}
