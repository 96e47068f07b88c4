import type { ApiKeysTable, DeliveriesTable, EventsTable, Role, UsersTable, WebhooksTable } from '../db/types.js';
import type { NotificationTypeOf } from '../kernel/notification-types.js';
import type { Tenant } from '../kernel/principal.js';

/**
 * What a change says happened, emitted in its transaction (`Change.emit`). The module that makes the change
 * emits it and knows nothing of who listens; the subscribers the wiring registers (src/services.ts) react in
 * the same transaction: webhook deliveries, integrations, notifications, plan limits. A subscriber that
 * throws fails the change, so a limit is enforced by refusing what was just written.
 */
export type DomainEvent =
  | ResourceEvent
  | { type: 'webhook.created'; tenant: Tenant; webhookId: string }
  | KeyEvent
  | MemberEvent
  | { type: 'security.notice'; notice: SecurityNotice }
  | { type: 'endpoint.health'; kind: 'failing' | 'disabled' | 'recovered'; webhook: WebhooksTable; at: string }
  | { type: 'billing.notice'; notice: BillingNotice }
  | { type: 'link.issued'; notice: LinkNotice }
  | { type: 'receivers.changed'; workspaceId: string }
  | { type: 'workspace.created'; workspaceId: string; name: string; at: string }
  | { type: 'event.recorded'; event: EventsTable; receivers: string | null }
  | MemberJoinedEvent
  | WebhookStatusEvent
  | DeliveryExhaustedEvent
  | InvoiceSettledEvent
  | InvoicePaymentFailedEvent
  | { type: 'subscription.unpaid' | 'subscription.reactivated'; workspaceId: string; invoiceId: string; at: string }
  | WorkspaceLifecycleEvent
  | { type: 'export.ready'; workspaceId: string; exportId: string; expiresAt: string; at: string }
  | { type: 'notification.recorded'; notice: ForwardedNotice };

export type DomainEventType = DomainEvent['type'];
/** The events of one type (an event whose `type` is a union, like ResourceEvent's, counts for each member). */
export type DomainEventOf<T extends DomainEventType> = DomainEvent extends infer E
  ? E extends { type: infer U }
    ? T extends U
      ? E & { type: T }
      : never
    : never
  : never;

/** A resource's change, with the catalogue event's `data` (docs/api.md#events) its endpoints receive. */
export interface ResourceEvent {
  type: 'resource.created' | 'resource.updated' | 'resource.status_changed' | 'resource.deleted';
  tenant: Tenant;
  resourceId: string;
  data: Record<string, unknown>;
  /** When it happened (ms): the event's `created_at`. */
  at: number;
}

/** A change to an API key (its row as it is after the change; never the key itself). */
export interface KeyEvent {
  type: 'key.created' | 'key.revoked' | 'key.rolled' | 'key.expiring';
  key: ApiKeysTable;
  at: string;
  /** key.rolled: the successor, and when the old key stops working. */
  successorId?: string;
  oldExpiresAt?: string;
  /** key.expiring: when the key stops working. */
  expiresAt?: string;
}

/** A change to a workspace's members (the member's row as it is after the change). */
export interface MemberEvent {
  type: 'member.added' | 'member.removed' | 'member.role_changed';
  member: UsersTable;
  at: string;
  /** member.role_changed: the role before. */
  previousRole?: Role;
  /** A new workspace's first admin: there is no one else to tell. */
  first?: boolean;
}

/** What a security notification says (`notifications.data`, written with it). */
export interface SecurityNoticeData {
  /** When it happened. */
  at: string;
  /** key.*: the key. */
  key?: { id: string; name: string; env: string; prefix: string; owner_email: string | null };
  /** key.rolled: the successor, and when the old key stops working. */
  successor_id?: string;
  old_expires_at?: string;
  /** key.expiring: when the key stops working. */
  expires_at?: string;
  /** member.*: the member. */
  member?: { id: string; email: string; role: string; previous_role?: string };
  /** mfa.*, passkey.*, recovery_code*: which factor (never its secret), and the codes left. */
  factor?: { kind: 'totp' | 'passkey' | 'recovery_codes'; name?: string; remaining?: number };
  /** mfa.reset, sso.configured, workspace.settings_changed: the admin who made the change. */
  by?: string;
  /** sso.configured, workspace.settings_changed: what is in force now (never the client secret). */
  settings?: Record<string, string | boolean | string[] | null>;
}

/** A security notification (always on) about someone's own sign-in: who is told, and what. */
export interface SecurityNotice {
  type: NotificationTypeOf<'security'>;
  workspaceId: string;
  /** The affected user(s), told whatever their role. */
  users: string[];
  /** Whether the workspace's admins are told too. */
  admins: boolean;
  /** Not told even as an admin. */
  except?: string;
  data: SecurityNoticeData;
}

export interface UsageNoticeData {
  /** 50, 80 or 100 (% of the included requests). */
  threshold: number;
  billable_requests: number;
  included_requests: number;
  plan: string;
  plan_name: string;
  /** Whether the plan refuses requests over the included ones (429 quota_exceeded). */
  hard_cap: boolean;
  period_start: string;
  period_end: string;
  /** When the job found the threshold crossed. */
  at: string;
}

export interface InvoiceNoticeData {
  invoice_id: string;
  number: string;
  plan: string;
  total_cents: number;
  currency: string;
  period_start: string;
  period_end: string;
  at: string;
  /** invoice.payment_failed: the decline, and the next attempt (null: none, the invoice is uncollectible). */
  decline_code?: string | null;
  message?: string | null;
  next_attempt_at?: string | null;
}

/** A usage or billing notification to the workspace's admins (on by default, per their preferences). */
export type BillingNotice =
  | {
      type: NotificationTypeOf<'usage'>;
      workspaceId: string;
      data: UsageNoticeData;
      /** Every threshold this change recorded for the period, lowest first (`data.threshold` is the highest). */
      thresholds?: number[];
    }
  | { type: NotificationTypeOf<'billing'>; workspaceId: string; data: InvoiceNoticeData };

export interface LinkNoticeData {
  workspace_name: string;
  /** The role given (invites). */
  role?: string;
  expires_at: string;
}

/** An invite or password-reset email, written in the transaction that makes its link. */
export interface LinkNotice {
  type: 'invite' | 'password.reset';
  workspaceId: string;
  userId: string;
  /** The single-use link: kept until the email is sent or given up. */
  url: string;
  data: LinkNoticeData;
}

/** A notification as integrations forward it: once per workspace, not per recipient. */
export interface ForwardedNotice {
  workspaceId: string;
  category: string;
  type: string;
  title: string;
  data: Record<string, unknown>;
  at: string;
}

/** An invited member set their password from their invite link: they can sign in. */
export interface MemberJoinedEvent {
  type: 'member.joined';
  member: Pick<UsersTable, 'id' | 'workspace_id' | 'email' | 'name' | 'role'>;
  at: string;
}

/** Someone enabled or disabled a webhook by hand (endpoint health's disable is `endpoint.health`). */
export interface WebhookStatusEvent {
  type: 'webhook.status_changed';
  /** The endpoint as it is after the change. */
  webhook: WebhooksTable;
  at: string;
}

/** Every retry of a delivery failed (the delivery as the worker wrote its last attempt). */
export interface DeliveryExhaustedEvent {
  type: 'delivery.exhausted';
  delivery: Pick<
    DeliveriesTable,
    'id' | 'webhook_id' | 'event_id' | 'event_type' | 'workspace_id' | 'env' | 'attempt_count' | 'last_response_status'
  >;
  at: string;
}

/** An open invoice was marked paid or void. */
export interface InvoiceSettledEvent {
  type: 'invoice.settled';
  workspaceId: string;
  status: 'paid' | 'void';
  data: InvoiceNoticeData;
}

/** A charge of a finalized invoice failed (`data.at`: when the attempt failed). */
export interface InvoicePaymentFailedEvent {
  type: 'invoice.payment_failed';
  workspaceId: string;
  data: InvoiceNoticeData;
}

/** A workspace's deletion was scheduled or cancelled, or its rows are gone (`workspace.deleted`). */
export interface WorkspaceLifecycleEvent {
  type: 'workspace.deletion_scheduled' | 'workspace.deletion_cancelled' | 'workspace.deleted';
  workspaceId: string;
  at: string;
  /** workspace.deletion_scheduled: when the job deletes the rows. */
  deleteAt?: string;
}
