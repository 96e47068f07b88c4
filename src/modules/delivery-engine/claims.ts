import type { DeliveryAttemptsTable, DeliveryStatus } from '../../db/types.js';

/** What a worker needs to make one attempt: the claim, the webhook's address and secret, the body. */
export interface ClaimedDelivery {
  id: string;
  attempt_count: number;
  webhook_id: string;
  /** The webhook's workspace. */
  workspace_id: string;
  /** `disabled` when the endpoint was disabled after this delivery was queued: it is cancelled, not sent. */
  webhook_status: 'enabled' | 'disabled';
  url: string;
  /** The signing secret, opened by the outbox's claim (stored sealed, src/lib/sealed.ts). */
  secret: string;
  /** The secret before the last rotation, which also signs until `previous_secret_expires_at`. */
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  event_id: string;
  event_type: string;
  payload: string;
}

/** The outcome of one attempt, written back by the worker that holds the lease. */
export interface AttemptResult {
  deliveryId: string;
  /** The endpoint attempted: its health follows the outcome (endpoint-health.ts). */
  webhookId: string;
  /** null: no attempt was made (the delivery was cancelled). */
  attempt: Omit<DeliveryAttemptsTable, 'delivery_id'> | null;
  /** The delivery's state after this attempt. */
  status: DeliveryStatus;
  nextAttemptAt: string | null;
}
