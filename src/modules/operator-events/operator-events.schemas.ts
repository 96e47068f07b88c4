import { type Static, type TObject, Type } from '@sinclair/typebox';
import { OPERATOR_EVENT_TYPES, type OperatorEventType } from '../../kernel/event-types.js';
import { Timestamp } from '../../kernel/schemas.js';

/**
 * The `data` of the instance-wide events sent to OPERATOR_WEBHOOK_URL (docs/api.md#operator-events). Like the
 * catalogue's, none carries a key, a secret, a token or a link.
 */
const WorkspaceId = Type.String({ examples: ['ws_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] });

export const OperatorWorkspaceCreatedData = Type.Object(
  { workspace_id: WorkspaceId, name: Type.String({ examples: ['Acme'] }) },
  { title: 'workspace.created operator data' },
);
export const OperatorWorkspaceDeletedData = Type.Object(
  { workspace_id: WorkspaceId },
  { title: 'workspace.deleted operator data', description: "The workspace's rows are gone." },
);
export const OperatorInvoicePaymentFailedData = Type.Object(
  {
    workspace_id: WorkspaceId,
    invoice_id: Type.String({ examples: ['inv_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    number: Type.String({ examples: ['INV-1'] }),
    plan: Type.String({ examples: ['pro'] }),
    total_cents: Type.Integer(),
    currency: Type.String({ examples: ['usd'] }),
    period_start: Timestamp,
    period_end: Timestamp,
    failed_at: Timestamp,
  },
  { title: 'invoice.payment_failed operator data' },
);
export const OperatorSubscriptionUnpaidData = Type.Object(
  { workspace_id: WorkspaceId, invoice_id: Type.String({ examples: ['inv_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }) },
  { title: 'subscription.unpaid operator data', description: 'The invoice whose charges all failed.' },
);

/** Each operator event type's `data` schema. */
export const OPERATOR_EVENT_DATA = {
  'workspace.created': OperatorWorkspaceCreatedData,
  'workspace.deleted': OperatorWorkspaceDeletedData,
  'invoice.payment_failed': OperatorInvoicePaymentFailedData,
  'subscription.unpaid': OperatorSubscriptionUnpaidData,
} as const satisfies Record<OperatorEventType, TObject>;
export type OperatorEventDataOf<T extends OperatorEventType> = Static<(typeof OPERATOR_EVENT_DATA)[T]>;

/**
 * The body POSTed to OPERATOR_WEBHOOK_URL: the same envelope as an endpoint's event (`id`, `event`, `created_at`,
 * `data`), discriminated by `event`.
 */
export const OperatorEventSchema = Type.Union(
  OPERATOR_EVENT_TYPES.map((type) =>
    Type.Object(
      {
        id: Type.String({ examples: ['evt_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
        event: Type.Literal(type),
        created_at: Timestamp,
        data: OPERATOR_EVENT_DATA[type],
      },
      { title: `${type} operator event` },
    ),
  ),
  {
    $id: 'OperatorEvent',
    title: 'OperatorEvent',
    description: 'Sent to OPERATOR_WEBHOOK_URL only; discriminated by `event`.',
  },
);
