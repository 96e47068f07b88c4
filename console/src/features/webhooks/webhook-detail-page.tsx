import { useNavigate, useParams } from 'react-router';
import { useScopedMutation, useScopedQuery } from '../../api/hooks';
import type { Webhook } from '../../api/types';
import { useCurrent, usePathTo } from '../../lib/session';
import { Badge, ConfirmButton, PageHeader, Time } from '../../ui/primitives';
import { QueryView } from '../../ui/states';
import { DeliveryLog } from '../deliveries/delivery-log';

export default function WebhookDetailPage() {
  const { id = '' } = useParams();
  const { isAdmin } = useCurrent();
  const to = usePathTo();
  const navigate = useNavigate();
  const webhook = useScopedQuery<{ data: Webhook }>(`/v1/webhooks/${id}`);
  const remove = useScopedMutation<undefined, unknown>('DELETE', `/v1/webhooks/${id}`);
  return (
    <QueryView query={webhook} what="Loading the endpoint">
      {({ data: w }) => (
        <section>
          <PageHeader
            title={w.label ?? 'Webhook endpoint'}
            actions={
              isAdmin ? (
                <ConfirmButton
                  label="Delete endpoint"
                  title="Delete this endpoint?"
                  message="It stops receiving events at once; its delivery log is removed."
                  confirmLabel="Delete endpoint"
                  onConfirm={async () => {
                    await remove.mutateAsync(undefined);
                    navigate(to('/webhooks'));
                  }}
                />
              ) : null
            }
          >
            <p>
              <code>{w.url}</code> <Badge tone={w.status === 'enabled' ? 'good' : 'warn'}>{w.status}</Badge>
            </p>
          </PageHeader>
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
          <DeliveryLog webhookId={w.id} />
        </section>
      )}
    </QueryView>
  );
}
