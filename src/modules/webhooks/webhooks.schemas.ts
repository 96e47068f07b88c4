import { type Static, Type } from '@sinclair/typebox';
import { PageQueryProps, Timestamp } from '../../http/schemas.js';
import { EVENT_TYPES } from '../events/events.schemas.js';

/** docs/api.md#webhooks: at most this many webhooks per workspace and environment. */
export const MAX_WEBHOOKS = 16;

export const WebhookSchema = Type.Object(
  {
    id: Type.String({ examples: ['wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    url: Type.String({ examples: ['https://example.com/hooks/workspace'] }),
    events: Type.Array(Type.String(), { examples: [['resource.status_changed']] }),
    label: Type.Union([Type.String(), Type.Null()]),
    status: Type.Literal('enabled'),
    workspace_id: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Webhook', title: 'Webhook', description: 'A webhook endpoint. The secret is never returned here.' },
);
export type Webhook = Static<typeof WebhookSchema>;

export const CreatedWebhookSchema = Type.Object(
  {
    id: Type.String(),
    url: Type.String(),
    events: Type.Array(Type.String()),
    label: Type.Union([Type.String(), Type.Null()]),
    status: Type.Literal('enabled'),
    workspace_id: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
    secret: Type.String({
      description:
        'Signing secret, `whsec_` + base64 of 32 random bytes. Returned only in this response: store it now.',
      examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+M5jXWJw0Ls='],
    }),
  },
  { title: 'Created webhook' },
);
export type CreatedWebhook = Static<typeof CreatedWebhookSchema>;

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'https:// URL resolving only to public addresses; `WEBHOOK_ALLOW_INSECURE_URLS=true` lifts this for local development.',
    }),
    events: Type.Array(Type.Union([...EVENT_TYPES.map((t) => Type.Literal(t)), Type.Literal('*')]), {
      minItems: 1,
      maxItems: 50,
      uniqueItems: true,
      description: 'Event types to receive, or `["*"]` for all, current and future.',
    }),
    label: Type.Optional(Type.String({ maxLength: 255, description: 'Shown in the dashboard; 0..255 characters.' })),
  },
  { additionalProperties: false },
);
export type CreateWebhookInput = Static<typeof CreateWebhookBody>;

export const ListWebhooksQuery = Type.Object({ ...PageQueryProps }, { additionalProperties: false });

// The delivery log's objects belong to the delivery module; the webhook routes serve them.
export {
  type Delivery,
  type DeliveryDetail,
  DeliveryDetailSchema,
  DeliverySchema,
} from '../delivery/delivery.schemas.js';

export const ListDeliveriesQuery = Type.Object(
  {
    ...PageQueryProps,
    status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')])),
  },
  { additionalProperties: false },
);
