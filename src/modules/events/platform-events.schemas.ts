import { type Static, Type } from '@sinclair/typebox';
import { ENVIRONMENTS } from '../../kernel/environments.js';
import { Timestamp } from '../../kernel/schemas.js';

/**
 * The `data` of what happens to the workspace itself (docs/api.md#platform-events). None carries key material,
 * a webhook secret, a token, a link, a password or its hash, or an endpoint's URL (which may hold a token):
 * `test/events/no-secrets.test.ts` walks every schema and example.
 */

const Env = Type.Union(ENVIRONMENTS.map((e) => Type.Literal(e)));
const NullableTime = Type.Union([Timestamp, Type.Null()]);

const KeyObject = Type.Object(
  {
    id: Type.String({ examples: ['key_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    name: Type.String({ examples: ['CI deploys'] }),
    env: Env,
    scopes: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'null: every scope.' }),
    user_id: Type.String({ description: 'The owner.' }),
    created_by: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp,
    expires_at: NullableTime,
    revoked_at: NullableTime,
  },
  { description: 'The key as it is after the change: its record, never the key or its digest.' },
);

export const KeyCreatedData = Type.Object({ key: KeyObject }, { title: 'key.created data' });
export const KeyRevokedData = Type.Object({ key: KeyObject }, { title: 'key.revoked data' });
export const KeyRolledData = Type.Object(
  {
    key: KeyObject,
    successor_id: Type.String({ description: 'The key that succeeds it.' }),
    old_expires_at: Timestamp,
  },
  { title: 'key.rolled data', description: 'The rolled key keeps working until `old_expires_at`.' },
);
export const KeyExpiringData = Type.Object(
  { key: KeyObject, expires_at: Timestamp },
  { title: 'key.expiring data', description: 'Sent once, 7 days or less before the key stops working.' },
);

const Role = Type.Union([Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')]);
const MemberObject = Type.Object({
  id: Type.String({ examples: ['usr_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
  email: Type.String({ examples: ['ada@example.com'] }),
  name: Type.Union([Type.String(), Type.Null()]),
  role: Role,
});
export const MemberInvitedData = Type.Object({ member: MemberObject }, { title: 'member.invited data' });
export const MemberJoinedData = Type.Object(
  { member: MemberObject },
  { title: 'member.joined data', description: 'The invited member set their password: they can sign in.' },
);
export const MemberRoleChangedData = Type.Object(
  { member: MemberObject, previous_role: Role },
  { title: 'member.role_changed data' },
);
export const MemberRemovedData = Type.Object({ member: MemberObject }, { title: 'member.removed data' });

const WebhookObject = {
  webhook_id: Type.String({ examples: ['wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
  label: Type.Union([Type.String(), Type.Null()]),
  env: Env,
};
export const WebhookDisabledData = Type.Object(
  {
    ...WebhookObject,
    reason: Type.Union([Type.Literal('manual'), Type.Literal('failing')], {
      description: '`failing`: disabled by endpoint health; `manual`: by someone.',
    }),
  },
  {
    title: 'webhook.disabled data',
    description: 'Sent to the other subscribed endpoints of its environment, never to the disabled one.',
  },
);
export const WebhookEnabledData = Type.Object({ ...WebhookObject }, { title: 'webhook.enabled data' });

export const DeliveryExhaustedData = Type.Object(
  {
    delivery_id: Type.String({ examples: ['dlv_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    event_id: Type.String({ examples: ['evt_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    event_type: Type.String({ examples: ['resource.created'] }),
    webhook_id: Type.String({ examples: ['wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    attempts: Type.Integer({ minimum: 1 }),
    last_response_status: Type.Union([Type.Integer(), Type.Null()], {
      description: "The last attempt's HTTP status; null when it got no answer.",
    }),
  },
  {
    title: 'delivery.exhausted data',
    description:
      'Every retry of a delivery failed. Once per event and endpoint, to the other subscribed endpoints of its ' +
      'environment; never about a delivery of a `delivery.exhausted` event.',
  },
);

const UsageProps = {
  billable_requests: Type.Integer(),
  included_requests: Type.Integer(),
  plan: Type.String({ examples: ['free'] }),
  period_start: Timestamp,
  period_end: Timestamp,
};
export const UsageThresholdData = Type.Object(
  { threshold: Type.Union([Type.Literal(50), Type.Literal(80), Type.Literal(100)]), ...UsageProps },
  { title: 'usage.threshold data', description: 'Once per threshold and billing period.' },
);
export const UsageCapReachedData = Type.Object(
  { ...UsageProps },
  {
    title: 'usage.cap_reached data',
    description: 'A plan with a hard cap used all its included requests: requests answer 429 until the period ends.',
  },
);

const InvoiceProps = {
  invoice_id: Type.String({ examples: ['inv_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
  number: Type.String({ examples: ['INV-1'] }),
  plan: Type.String(),
  total_cents: Type.Integer(),
  currency: Type.String({ examples: ['usd'] }),
  period_start: Timestamp,
  period_end: Timestamp,
};
export const InvoiceFinalizedData = Type.Object({ ...InvoiceProps }, { title: 'invoice.finalized data' });
export const InvoicePaymentSucceededData = Type.Object(
  { ...InvoiceProps, paid_at: Timestamp },
  { title: 'invoice.payment_succeeded data' },
);
export const InvoicePaymentFailedData = Type.Object(
  { ...InvoiceProps, failed_at: Timestamp },
  { title: 'invoice.payment_failed data' },
);

export const WorkspaceDeletionScheduledData = Type.Object(
  { workspace_id: Type.String(), delete_at: Timestamp },
  { title: 'workspace.deletion_scheduled data' },
);
export const WorkspaceDeletionCancelledData = Type.Object(
  { workspace_id: Type.String() },
  { title: 'workspace.deletion_cancelled data' },
);
export const ExportReadyData = Type.Object(
  { export_id: Type.String(), expires_at: Timestamp },
  { title: 'export.ready data', description: 'Download it from the console; the event carries no link.' },
);

export type KeyObjectData = Static<typeof KeyObject>;
export type MemberObjectData = Static<typeof MemberObject>;
