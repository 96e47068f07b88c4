import { type Static, Type } from '@sinclair/typebox';
import { DELIVERY_STATUSES, type DeliveryStatus } from '../../kernel/delivery-statuses.js';

import type { AnyEventType } from '../../kernel/event-types.js';
import { Timestamp } from '../../kernel/schemas.js';

export { DELIVERY_STATUSES };

/** Filters of the environment-wide delivery log (`GET /deliveries`); times are ISO 8601 UTC. */
export type DeliveryFilter = {
  webhook_id?: string;
  status?: DeliveryStatus;
  event?: AnyEventType;
  created_after?: string;
  created_before?: string;
};

const AttemptSchema = Type.Object(
  {
    number: Type.Integer({ description: '1 for the first attempt.' }),
    attempted_at: Timestamp,
    duration_ms: Type.Integer(),
    response_status: Type.Union([Type.Integer(), Type.Null()], { description: 'null when no response came.' }),
    response_body: Type.Union([Type.String(), Type.Null()], { description: 'First 1 KiB of the response body.' }),
    error: Type.Union([Type.String(), Type.Null()], {
      description: 'Why the attempt failed (timeout, connection error, non-2xx, blocked address); null on success.',
    }),
    request_headers: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()], {
      description:
        'The request headers sent (names in lower case, values as sent: content-type, content-length, user-agent, webhook-id, ' +
        'webhook-timestamp, webhook-signature, x-service-signature); null for attempts recorded before the service kept them.',
    }),
  },
  { title: 'Delivery attempt' },
);

const deliveryProps = {
  id: Type.String({ examples: ['dlv_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
  webhook_id: Type.String(),
  event_id: Type.String(),
  event: Type.String({ description: 'Event type.' }),
  status: Type.Union(
    DELIVERY_STATUSES.map((s) => Type.Literal(s)),
    {
      description:
        '`pending` until a 2xx (`succeeded`) or the last retry fails (`failed`); `cancelled` when the endpoint was disabled while it was pending.',
    },
  ),
  attempt_count: Type.Integer(),
  next_attempt_at: Type.Union([Timestamp, Type.Null()], { description: 'When a pending delivery is due.' }),
  last_response_status: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
};
export const DeliverySchema = Type.Object(deliveryProps, { $id: 'Delivery', title: 'Delivery' });
export type Delivery = Static<typeof DeliverySchema>;
export const DeliveryDetailSchema = Type.Object(
  { ...deliveryProps, attempts: Type.Array(AttemptSchema) },
  { title: 'Delivery with attempts' },
);
export type DeliveryDetail = Static<typeof DeliveryDetailSchema>;

/** The windows of the delivery summary: how many periods of how many hours (the last ends with the current hour). */
export const SUMMARY_WINDOWS = {
  '24h': { periods: 24, hours: 1 },
  '7d': { periods: 28, hours: 6 },
  '30d': { periods: 30, hours: 24 },
} as const;
export type SummaryWindow = keyof typeof SUMMARY_WINDOWS;

export const DeliverySummaryQuery = Type.Object(
  {
    window: Type.Optional(
      Type.Union(
        Object.keys(SUMMARY_WINDOWS).map((w) => Type.Literal(w as SummaryWindow)),
        { default: '24h', description: 'How far back the series goes: `24h` (default), `7d` or `30d`.' },
      ),
    ),
  },
  { additionalProperties: false },
);

const statusCounts = {
  succeeded: Type.Integer(),
  failed: Type.Integer(),
  pending: Type.Integer(),
  cancelled: Type.Integer(),
};

export const DeliverySummarySchema = Type.Object(
  {
    window: Type.String({ examples: ['24h'] }),
    since: { ...Timestamp, description: 'Start of the first period of the series.' },
    until: { ...Timestamp, description: 'When the summary was made.' },
    period_hours: Type.Integer({ description: 'Length of each period of the series: 1 (24h), 6 (7d) or 24 (30d).' }),
    totals: Type.Object(statusCounts, { description: 'Deliveries created in the window, by state.' }),
    success_rate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
      description: 'succeeded / (succeeded + failed) over the window; null when none has finished.',
    }),
    series: Type.Array(
      Type.Object({ start: { ...Timestamp, description: 'Start of the UTC hour.' }, ...statusCounts }),
      {
        description: 'One entry per hour of the window, oldest first, zeros included.',
      },
    ),
    recent_failures: Type.Array(Type.Ref(DeliverySchema), {
      description: 'The 10 newest failed deliveries, whenever they were created, newest first.',
    }),
  },
  { title: 'Delivery summary' },
);
export type DeliverySummary = Static<typeof DeliverySummarySchema>;
