import { type Static, type TObject, Type } from '@sinclair/typebox';
import { ALL_EVENT_TYPES, type AnyEventType } from '../../kernel/event-types.js';
import { OrderQueryProps, PageQueryProps, Timestamp } from '../../kernel/schemas.js';
import * as P from './platform-events.schemas.js';

/**
 * The resource object as the resources module defines it (schema `Resource`, registered by the app),
 * referenced by id so that events, which resources emit, do not depend back on resources.
 */
const ResourceRef = Type.Unsafe<Record<string, unknown>>(Type.Ref('Resource'));

export {
  ALL_EVENT_TYPES,
  type AnyEventType,
  EVENT_TYPES,
  type EventType,
  PLATFORM_EVENT_TYPES,
  type PlatformEventType,
  RESOURCE_EVENT_TYPES,
  type ResourceEventType,
  TEST_EVENT_TYPE,
} from '../../kernel/event-types.js';

const ResourceId = Type.String({ examples: ['res_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] });
/** Receivers must tolerate `paused` (docs/api.md#resources); the service never emits it in v1. */
const EventStatus = Type.Union([Type.Literal('active'), Type.Literal('archived'), Type.Literal('paused')]);

const CreatedData = Type.Object({ resource_id: ResourceId, resource: ResourceRef }, { title: 'resource.created data' });
const UpdatedData = Type.Object(
  {
    resource_id: ResourceId,
    resource: ResourceRef,
    previous_attributes: Type.Object(
      {
        name: Type.Optional(Type.String()),
        metadata: Type.Optional(Type.Record(Type.String(), Type.String())),
      },
      { description: 'The changed fields, with their values before the change.' },
    ),
  },
  { title: 'resource.updated data' },
);
const StatusChangedData = Type.Object(
  { resource_id: ResourceId, previous_status: EventStatus, current_status: EventStatus },
  { title: 'resource.status_changed data' },
);
const DeletedData = Type.Object(
  { resource_id: ResourceId },
  { title: 'resource.deleted data', description: 'Only the id: a deleted resource leaves no data behind.' },
);

const TestData = Type.Object(
  {
    webhook_id: Type.String({ examples: ['wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    message: Type.String({ examples: ['This is a test event sent from the API.'] }),
  },
  { title: 'webhook.test data', description: 'Sent only to the endpoint it was asked for.' },
);

/** Each catalogue type's `data` schema (docs/api.md#event-reference is generated from them). */
export const EVENT_DATA = {
  'resource.created': CreatedData,
  'resource.updated': UpdatedData,
  'resource.status_changed': StatusChangedData,
  'resource.deleted': DeletedData,
  'key.created': P.KeyCreatedData,
  'key.revoked': P.KeyRevokedData,
  'key.rolled': P.KeyRolledData,
  'key.expiring': P.KeyExpiringData,
  'member.invited': P.MemberInvitedData,
  'member.joined': P.MemberJoinedData,
  'member.role_changed': P.MemberRoleChangedData,
  'member.removed': P.MemberRemovedData,
  'webhook.disabled': P.WebhookDisabledData,
  'webhook.enabled': P.WebhookEnabledData,
  'delivery.exhausted': P.DeliveryExhaustedData,
  'usage.threshold': P.UsageThresholdData,
  'usage.cap_reached': P.UsageCapReachedData,
  'invoice.finalized': P.InvoiceFinalizedData,
  'invoice.payment_succeeded': P.InvoicePaymentSucceededData,
  'invoice.payment_failed': P.InvoicePaymentFailedData,
  'workspace.deletion_scheduled': P.WorkspaceDeletionScheduledData,
  'workspace.deletion_cancelled': P.WorkspaceDeletionCancelledData,
  'export.ready': P.ExportReadyData,
  'webhook.test': TestData,
} as const satisfies Record<AnyEventType, TObject>;

/** The `data` of an event of type `T`. */
export type EventDataOf<T extends AnyEventType> = Static<(typeof EVENT_DATA)[T]>;

const TestFlag = Type.Optional(
  Type.Literal(true, {
    description:
      'Present (`true`) only on a test event of a catalogue type sent by `POST /webhooks/{id}/test` with `event_type`: ' +
      'its `data` is an example, not a real change. (`webhook.test` events are tests by their type and carry no such field.)',
  }),
);

/** One member of the union: the event object of type `type`. */
function variant<T extends AnyEventType>(type: T) {
  return Type.Object(
    {
      id: Type.String({ examples: ['evt_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
      event: Type.Literal(type),
      created_at: Timestamp,
      test: TestFlag,
      data: EVENT_DATA[type],
    },
    { title: `${type} event` },
  );
}

/**
 * The event object: what `GET /events` answers and exactly the JSON body a webhook receives
 * (docs/api.md#webhook-deliveries), a union discriminated by `event`, each type with its own `data`.
 */
export const EventSchema = Type.Union(
  ALL_EVENT_TYPES.map((t) => variant(t)),
  {
    $id: 'Event',
    title: 'Event',
    description: 'Discriminated by `event`; `webhook.test` only from `POST /webhooks/{id}/test`.',
    examples: [
      {
        id: 'evt_01JD3K9A1B2C3D4E5F6G7H8J9K',
        event: 'resource.status_changed',
        created_at: '2026-11-22T10:15:30.123Z',
        data: { resource_id: 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R', previous_status: 'active', current_status: 'archived' },
      },
      {
        id: 'evt_01JD3K9A1B2C3D4E5F6G7H8J9M',
        event: 'resource.updated',
        created_at: '2026-11-22T10:15:31.004Z',
        data: {
          resource_id: 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
          resource: {
            id: 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
            name: 'Renamed',
            type: 'standard',
            status: 'active',
            metadata: { color: 'blue' },
            workspace_id: 'ws_01JD3K8Z6W6J9Q4X1V5N2M7P8A',
            created_at: '2026-11-22T10:15:30.123Z',
            updated_at: '2026-11-22T10:15:31.004Z',
          },
          previous_attributes: { name: 'Original' },
        },
      },
      {
        id: 'evt_01JD3K9A1B2C3D4E5F6G7H8J9N',
        event: 'resource.deleted',
        created_at: '2026-11-22T10:15:32.000Z',
        data: { resource_id: 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R' },
      },
    ],
  },
);
/** The event object, typed by its `event`. */
export type Event = {
  [T in AnyEventType]: { id: string; event: T; created_at: string; test?: true; data: EventDataOf<T> };
}[AnyEventType];

export const ListEventsQuery = Type.Object(
  {
    ...PageQueryProps,
    ...OrderQueryProps,
    event: Type.Optional(Type.Union(ALL_EVENT_TYPES.map((t) => Type.Literal(t)))),
    resource_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: false },
);
export type ListEventsFilter = { event?: AnyEventType; resource_id?: string };
