import { type Static, Type } from '@sinclair/typebox';
import type { DeliveryStatus } from '../../db/types.js';
import { Timestamp } from '../../http/schemas.js';

/** Every state of a delivery. */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;

/** Filters of the environment-wide delivery log (`GET /deliveries`); times are ISO 8601 UTC. */
export type DeliveryFilter = {
  webhook_id?: string;
  status?: DeliveryStatus;
  event?: string;
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
