import { type Static, Type } from '@sinclair/typebox';
import { Timestamp } from '../../http/schemas.js';

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
  status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')], {
    description: '`pending` until a 2xx (`succeeded`) or the last retry fails (`failed`).',
  }),
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
