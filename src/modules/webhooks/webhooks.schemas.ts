import { type Static, Type } from '@sinclair/typebox';
import { OrderQueryProps, PageQueryProps, SingleLine, Timestamp } from '../../kernel/schemas.js';
import { ALL_EVENT_TYPES, EVENT_TYPES } from '../events/events.schemas.js';
import { DELIVERY_STATUSES } from './deliveries.schemas.js';

/** docs/api.md#webhooks: at most this many webhooks per workspace and environment. */
export const MAX_WEBHOOKS = 16;

const webhookProps = {
  id: Type.String({ examples: ['wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
  url: Type.String({ examples: ['https://example.com/hooks/workspace'] }),
  events: Type.Array(Type.String(), { examples: [['resource.status_changed']] }),
  label: Type.Union([Type.String(), Type.Null()]),
  status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')], {
    description: 'A disabled endpoint gets no new deliveries; `POST /webhooks/{id}/enable` turns it back on.',
  }),
  disabled_reason: Type.Union([Type.Literal('manual'), Type.Literal('failing'), Type.Null()], {
    description:
      '`manual` after `POST /webhooks/{id}/disable`; `failing` when every attempt failed for `WEBHOOK_DISABLE_AFTER_H` hours (at least 10 attempts) and the service disabled it; null while enabled.',
  }),
  failing_since: Type.Union([Timestamp, Type.Null()], {
    description:
      'When the current run of failed attempts began (the first failure since the last success or the last enable); null while the endpoint is healthy.',
  }),
  previous_secret_expires_at: Type.Union([Timestamp, Type.Null()], {
    description:
      'After a secret rotation: until this time deliveries carry a second `webhook-signature` made with the previous secret; null when only one secret signs.',
  }),
  workspace_id: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
};

export const WebhookSchema = Type.Object(webhookProps, {
  $id: 'Webhook',
  title: 'Webhook',
  description: 'A webhook endpoint. The secret is never returned here.',
});
export type Webhook = Static<typeof WebhookSchema>;

const SecretField = Type.String({
  description: 'Signing secret, `whsec_` + base64 of 32 random bytes. Returned only in this response: store it now.',
  examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+M5jXWJw0Ls='],
});

export const CreatedWebhookSchema = Type.Object(
  { ...webhookProps, secret: SecretField },
  { title: 'Webhook with its secret' },
);
export type CreatedWebhook = Static<typeof CreatedWebhookSchema>;

const WebhookUrl = Type.String({
  minLength: 1,
  maxLength: 2048,
  description:
    'https:// URL resolving only to public addresses; for local development `WEBHOOK_ALLOW_INSECURE_URLS=true` ' +
    'allows http:// and loopback or private addresses, never link-local or cloud metadata ones.',
});
const WebhookEvents = Type.Array(Type.Union([...EVENT_TYPES.map((t) => Type.Literal(t)), Type.Literal('*')]), {
  minItems: 1,
  maxItems: 50,
  uniqueItems: true,
  description: 'Event types to receive, or `["*"]` for all, current and future (never `webhook.test`).',
});

export const CreateWebhookBody = Type.Object(
  {
    url: WebhookUrl,
    events: WebhookEvents,
    label: Type.Optional(
      SingleLine({
        minLength: 0,
        maxLength: 255,
        description: 'Shown in the dashboard; 0..255 characters on one line (docs/api.md#names).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateWebhookInput = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(WebhookUrl),
    events: Type.Optional(WebhookEvents),
    label: Type.Optional(
      Type.Union([SingleLine({ minLength: 0, maxLength: 255, description: 'The label.' }), Type.Null()], {
        description: '0..255 characters on one line (docs/api.md#names); null clears it.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type UpdateWebhookInput = Static<typeof UpdateWebhookBody>;

/** Longest overlap of an old and a new secret: 7 days. */
export const MAX_SECRET_OVERLAP_S = 604_800;

export const TestWebhookBody = Type.Object(
  {
    event_type: Type.Optional(
      Type.Union(
        ALL_EVENT_TYPES.map((t) => Type.Literal(t)),
        {
          default: 'webhook.test',
          description:
            'The type of the test event (default `webhook.test`). A catalogue type sends an example of that type ' +
            '(`test: true`, example `data` of the real shape), whether or not the endpoint subscribes to it.',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type TestWebhookInput = Static<typeof TestWebhookBody>;

export const RotateSecretBody = Type.Object(
  {
    expire_old_in_s: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_SECRET_OVERLAP_S,
        format: 'int32',
        default: 86_400,
        description: 'Seconds during which the old secret keeps signing, 0..604800 (default 86400, one day).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ListWebhooksQuery = Type.Object(
  { ...PageQueryProps, ...OrderQueryProps },
  { additionalProperties: false },
);

// The delivery log's objects belong to the delivery module; the webhook routes serve them.
export {
  DELIVERY_STATUSES,
  type Delivery,
  type DeliveryDetail,
  DeliveryDetailSchema,
  type DeliveryFilter,
  DeliverySchema,
  type DeliverySummary,
  DeliverySummaryQuery,
  DeliverySummarySchema,
  SUMMARY_WINDOWS,
  type SummaryWindow,
} from './deliveries.schemas.js';

const DeliveryStatusFilter = Type.Union(
  DELIVERY_STATUSES.map((s) => Type.Literal(s)),
  { description: 'Only deliveries in this state.' },
);

export const ListDeliveriesQuery = Type.Object(
  {
    ...PageQueryProps,
    ...OrderQueryProps,
    status: Type.Optional(DeliveryStatusFilter),
  },
  { additionalProperties: false },
);

export const ListAllDeliveriesQuery = Type.Object(
  {
    ...PageQueryProps,
    ...OrderQueryProps,
    webhook_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'Only this endpoint (wh_… id).' }),
    ),
    status: Type.Optional(DeliveryStatusFilter),
    event: Type.Optional(
      Type.Union(
        ALL_EVENT_TYPES.map((t) => Type.Literal(t)),
        { description: 'Only deliveries of this event type.' },
      ),
    ),
    created_after: Type.Optional({
      ...Timestamp,
      maxLength: 64,
      description: 'Only deliveries created strictly after this time.',
    }),
    created_before: Type.Optional({
      ...Timestamp,
      maxLength: 64,
      description: 'Only deliveries created strictly before this time.',
    }),
  },
  { additionalProperties: false },
);

export const BulkRetryBody = Type.Object(
  {
    status: Type.Optional(
      Type.Union([Type.Literal('failed'), Type.Literal('cancelled')], {
        default: 'failed',
        description: 'Which deliveries to re-queue: `failed` (default) or `cancelled`.',
      }),
    ),
    since: { ...Timestamp, maxLength: 64, description: 'Re-queue the deliveries created at or after this time.' },
  },
  { additionalProperties: false },
);
export type BulkRetryInput = Static<typeof BulkRetryBody>;

export const BulkRetryResultSchema = Type.Object(
  { requeued: Type.Integer({ description: 'How many deliveries were queued for one more attempt.' }) },
  { title: 'Bulk retry result' },
);
