import type { AuditAction } from '../kernel/audit-actions.js';
import type { DeliveryStatus } from '../kernel/delivery-statuses.js';
import type { Env } from '../kernel/environments.js';
import type { AnyEventType, OperatorEventType } from '../kernel/event-types.js';
import type { ExportStatus } from '../kernel/export-statuses.js';
import type { NotificationCategory, NotificationType } from '../kernel/notification-types.js';
import type { Platform } from '../kernel/platforms.js';
import type { Role } from '../kernel/roles.js';
import type { SessionStage, SignInMethod } from '../kernel/sign-in-methods.js';

// The closed sets (environments, roles, delivery statuses, event types, notification types, platforms,
// sign-in methods) are defined once, in the kernel (src/kernel/); re-exported for the tables' users.
export type {
  AnyEventType,
  DeliveryStatus,
  Env,
  ExportStatus,
  NotificationCategory,
  NotificationType,
  Platform,
  Role,
  SessionStage,
  SignInMethod,
};

// Timestamps are ISO 8601 strings (docs/api.md#timestamps) on both dialects; JSON columns are written as JSON text
// and read back through `readJson` (SQLite returns text, PostgreSQL jsonb returns objects).

export interface WorkspacesTable {
  id: string;
  name: string;
  created_at: string;
  updated_at: string;
  /** Set while the workspace's deletion is scheduled (migration 033, docs/data-lifecycle.md#deleting-a-workspace). */
  deletion_scheduled_at?: string | null;
  /** When the deletion job may delete its rows (the grace period's end). */
  delete_at?: string | null;
  /** Who scheduled it: the user's id, or `cli`. */
  deletion_scheduled_by?: string | null;
}

/** What stays of a deleted workspace besides its finalized invoices (migration 033). */
export interface WorkspaceTombstonesTable {
  workspace_id: string;
  deleted_at: string;
  /** Its audit chain's last entry when its rows were deleted; null when it had none. */
  audit_last_seq: number | string | null;
  audit_last_hash: string | null;
}

export interface UsersTable {
  id: string;
  workspace_id: string;
  email: string;
  name: string | null;
  role: Role;
  timezone: string | null;
  created_at: string;
  updated_at: string;
  /** Set when the user was removed from the workspace (docs/api.md#keys-scopes-and-roles: their keys stop working). */
  removed_at?: string | null;
}

/** docs/api.md#environments: the sandbox overlay of a profile, written and read by test keys only. */
export interface UserTestProfilesTable {
  user_id: string;
  name: string | null;
  timezone: string | null;
  updated_at: string;
}

export interface ApiKeysTable {
  id: string;
  workspace_id: string;
  user_id: string;
  env: Env;
  name: string;
  /** Hex SHA-256 of the whole key (docs/api.md#keys-scopes-and-roles); the plaintext is never stored. */
  digest: string;
  /** First characters of the key, for people to recognise it in lists. */
  prefix: string;
  /** JSON array of scopes, or null for every scope (docs/api.md#keys-scopes-and-roles). */
  scopes: string | null;
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
  /** When the key stops working (a rolled key's overlap end); null: never (migration 007). */
  expires_at?: string | null;
  /** When its "expiring in 7 days" notice (or its roll's) was written; null: not yet (migration 018). */
  expiry_notice_at?: string | null;
  /** The user who created the key; null when the CLI did (migration 007). */
  created_by?: string | null;
  /** The key this one was rolled from (POST /keys/{id}/roll); null otherwise (migration 019). */
  rolled_from?: string | null;
}

export interface ResourcesTable {
  id: string;
  workspace_id: string;
  env: Env;
  name: string;
  type: 'standard' | 'premium' | 'custom';
  status: 'active' | 'archived';
  metadata: unknown;
  created_at: string;
  updated_at: string;
}

/** Performance (docs/performance.md#totals-without-count): per-slot counts behind GET /resources meta.total (migration 005). */
export interface ResourceCountsTable {
  workspace_id: string;
  env: Env;
  status: ResourcesTable['status'];
  type: ResourcesTable['type'];
  slot: number;
  n: number | string | bigint;
}

export interface WebhooksTable {
  id: string;
  workspace_id: string;
  env: Env;
  url: string;
  events: unknown;
  label: string | null;
  status: 'enabled' | 'disabled';
  secret: string;
  /** After rotate-secret: the old secret, which also signs deliveries until it expires (migration 007). */
  previous_secret?: string | null;
  previous_secret_expires_at?: string | null;
  /** Why the endpoint is disabled (`manual`, or `failing` when endpoint health disabled it); null while enabled (migration 007). */
  disabled_reason?: string | null;
  /** Endpoint health (migration 011): the first failed attempt since the last success or the last enable; null when healthy. */
  failing_since?: string | null;
  /** Failed attempts since `failing_since`. */
  failed_attempts?: number;
  /** The last "failing" notification (at most one per 24 h). */
  failing_notified_at?: string | null;
  /** Set when a "failing" or "disabled" notification was written; cleared by the "recovered" one. */
  unhealthy_notified_at?: string | null;
  created_at: string;
  updated_at: string;
}

export interface IdempotencyKeysTable {
  workspace_id: string;
  env: Env;
  key: string;
  request_hash: string;
  state: 'processing' | 'done';
  status_code: number | null;
  response_body: string | null;
  locked_until: string;
  expires_at: string;
  created_at: string;
}

/** Outbox row (docs/api.md#events); `payload` is the exact JSON body receivers get (`{id, event, created_at, data}`). */
export interface EventsTable {
  id: string;
  workspace_id: string;
  env: Env;
  type: AnyEventType;
  resource_id: string | null;
  payload: string;
  created_at: string;
}

/** `cancelled`: still pending when its endpoint was disabled. */

/** One event to one webhook (docs/api.md#webhook-deliveries); claimed by a worker with a lease (docs/api.md#deployment). */
export interface DeliveriesTable {
  id: string;
  webhook_id: string;
  event_id: string;
  event_type: AnyEventType;
  workspace_id: string;
  env: Env;
  status: DeliveryStatus;
  attempt_count: number;
  /** When a pending delivery is due; null once it is final. */
  next_attempt_at: string | null;
  /** A worker's claim: other workers skip the row until this passes. */
  lease_until: string | null;
  leased_by: string | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * An instance-wide event for the operator's receiver (OPERATOR_WEBHOOK_URL, migration 029), with its body and its
 * delivery's state, claimed and attempted by the delivery worker like a `deliveries` row.
 */
export interface OperatorDeliveriesTable {
  id: string;
  /** The event's id: `webhook-id` on every attempt. */
  event_id: string;
  event_type: OperatorEventType;
  /** The workspace it is about (no foreign key: a deleted workspace's event stays). */
  workspace_id: string;
  /** The exact body sent. */
  payload: string;
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: string | null;
  lease_until: string | null;
  leased_by: string | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface DeliveryAttemptsTable {
  delivery_id: string;
  number: number;
  attempted_at: string;
  duration_ms: number;
  response_status: number | null;
  /** First 1 KiB of the receiver's response body. */
  response_body: string | null;
  error: string | null;
  /** The request headers sent, as JSON text; null for attempts made before migration 009. */
  request_headers?: string | null;
}

/** The console (docs/console.md): one console password per email (lower case), as an scrypt hash with its parameters. */
export interface ConsoleCredentialsTable {
  email: string;
  password_hash: string;
  created_at: string;
  updated_at: string;
}

/** A console sign-in; the cookie holds the token, this row only its SHA-256 digest. */
export interface ConsoleSessionsTable {
  id: string;
  token_digest: string;
  email: string;
  created_at: string;
  last_seen_at: string;
  /** Absolute expiry (30 days after sign-in); the idle expiry is last_seen_at + 12 h. */
  expires_at: string;
  ended_at: string | null;
  user_agent: string | null;
  ip: string | null;
  /** How it signed in (migration 021; older sessions: password). */
  method: SignInMethod;
  /** `enrol`: the person must add a second factor before anything else (a workspace requires one). */
  stage: SessionStage;
  /** A single sign-on session reaches this workspace only; null: every workspace of the email. */
  workspace_id: string | null;
}

/** A person's second factors (migration 021, docs/sign-in.md): TOTP while set up or confirmed, the WebAuthn user handle. */
export interface ConsoleMfaTable {
  email: string;
  /** The WebAuthn user handle of every passkey of this person: 32 random bytes, base64url. */
  webauthn_user_id: string;
  /** Base32 TOTP secret; null when TOTP is off. */
  totp_secret: string | null;
  /** Null while enrolment waits for its first code. */
  totp_confirmed_at: string | null;
  /** The last 30-second step whose code was accepted: a code is accepted once. */
  totp_last_step: number | string | null;
  created_at: string;
  updated_at: string;
}

/** One single-use recovery code, stored as SHA-256(salt ‖ code). */
export interface ConsoleRecoveryCodesTable {
  id: string;
  email: string;
  salt: string;
  digest: string;
  created_at: string;
  used_at: string | null;
}

/** A passkey (WebAuthn credential) of a person. */
export interface ConsolePasskeysTable {
  id: string;
  email: string;
  /** base64url, as the authenticator gives it. */
  credential_id: string;
  /** COSE public key, base64url. */
  public_key: string;
  counter: number | string;
  /** Comma-separated WebAuthn transports; null when unknown. */
  transports: string | null;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

export type WebauthnPurpose = 'register' | 'sign_in' | 'second_factor';

/** A WebAuthn challenge handed to a browser: single use, 5 minutes. */
export interface ConsoleWebauthnChallengesTable {
  challenge: string;
  purpose: WebauthnPurpose;
  /** Whose (register, second factor); null for a sign-in without an email. */
  email: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** Whether a workspace requires a second factor of its members (0 or 1). */
export interface WorkspaceMfaPoliciesTable {
  workspace_id: string;
  require_second_factor: number;
  updated_at: string;
}

/** A workspace's OpenID Connect single sign-on (migration 021). */
export interface WorkspaceSsoTable {
  workspace_id: string;
  issuer: string;
  client_id: string;
  /** Written by the admin, read only to call the token endpoint: never answered, logged or notified. */
  client_secret: string;
  /** JSON array of lower-case domains. */
  allowed_domains: string;
  default_role: Role;
  /** 1: password sign-in is refused for this workspace, except for the break-glass admin. */
  required: number;
  break_glass_user_id: string | null;
  created_at: string;
  updated_at: string;
}

/** A single sign-on in flight: its state (as a digest), nonce and PKCE verifier, bound to one browser. */
export interface SsoSignInsTable {
  state_digest: string;
  workspace_id: string;
  browser_digest: string;
  nonce: string;
  code_verifier: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** A password accepted whose second factor is still to come (5 minutes, once). */
export interface ConsolePendingSignInsTable {
  digest: string;
  email: string;
  ip: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export type ConsoleLinkPurpose = 'set_password' | 'invite' | 'reset';

/** A single-use link (set password, invite, reset), stored as the digest of its token. */
export interface ConsoleLinksTable {
  digest: string;
  purpose: ConsoleLinkPurpose;
  email: string;
  workspace_id: string | null;
  user_id: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** One failed sign-in, counted per email and per IP over 15 minutes. */
export interface ConsoleSignInFailuresTable {
  id: string;
  subject: string;
  at: string;
}

/** Requests of one key, route and status in one period (migration 010, docs/usage.md). */
export interface UsageCountsTable {
  workspace_id: string;
  env: Env;
  key_id: string;
  /** Method and route template, such as `GET /v1/resources/:id`. */
  route: string;
  status: number;
  granularity: 'minute' | 'hour' | 'day';
  /** Start of the period, ISO 8601 UTC with milliseconds. */
  period_start: string;
  count: number | string;
  latency_sum_ms: number;
  [bucket: `b${number}`]: number | string;
}

/** One 4xx/5xx answer to a key, kept 7 days (migration 010, docs/usage.md#request-log). */
export interface RequestLogTable {
  id: string;
  request_id: string;
  workspace_id: string;
  env: Env;
  key_id: string;
  user_id: string;
  method: string;
  route: string;
  path: string;
  status: number;
  error_code: string | null;
  error_message: string | null;
  latency_ms: number;
  /** The request body as received, up to 8 KiB, with keys and secrets replaced by `[redacted]`. */
  body: string | null;
  created_at: string;
}

/** One notification to one person (migration 012, docs/api.md#notifications), sent by the worker. */
export interface NotificationsTable {
  id: string;
  workspace_id: string;
  user_id: string;
  /** `account`: invite and password-reset emails (not in the feed, no preference); the others as docs/notifications.md says. */
  category: NotificationCategory;
  type: NotificationType;
  /** JSON text: what the message says (the endpoint, its environment, the times). */
  data: string;
  status: 'pending' | 'sent' | 'failed' | 'skipped';
  attempt_count: number;
  next_attempt_at: string | null;
  lease_until: string | null;
  leased_by: string | null;
  last_error: string | null;
  sent_at: string | null;
  created_at: string;
  /** When the recipient marked it read in the console's feed (migration 014). */
  read_at?: string | null;
  /** The single-use link of an invite or reset email until it is sent or given up, then null (migration 014). */
  secret?: string | null;
  /** Where it goes, from the recipient's preferences when written: `email,in_app`, `email`, `in_app`; null: both (migration 014). */
  channels?: string | null;
}

/** A user's channels for one optional category (migration 014); no row: every channel. */
export interface NotificationPreferencesTable {
  user_id: string;
  category: string;
  /** Comma-separated `email`, `in_app`; '' for none. */
  channels: string;
  updated_at: string;
}

/** An email kept instead of sent (no SMTP_URL): `wsvc mail list|show` (migration 012). */
export interface MailboxTable {
  id: string;
  notification_id: string;
  to_address: string;
  subject: string;
  text: string;
  html: string;
  message_id: string;
  created_at: string;
}

/** A workspace's plan (migration 013, docs/billing.md): one row per workspace. */
export interface SubscriptionsTable {
  workspace_id: string;
  plan: string;
  /** The workspace's creation: periods start at 00:00 UTC on this day of each month (clamped). */
  anchor_at: string;
  /** A downgrade waiting for the period's end, and that end. */
  pending_plan: string | null;
  pending_from: string | null;
  /** Billing began in the period containing this instant (invoices are made from it on). */
  started_at: string;
  created_at: string;
  updated_at: string;
  /** Migration 039: `unpaid` after an invoice became uncollectible, until an invoice is paid. */
  payment_state: 'active' | 'unpaid';
  unpaid_since: string | null;
}

/** A subscription as a new workspace's creation inserts it (payment state at its default). */
export type NewSubscription = Omit<SubscriptionsTable, 'payment_state' | 'unpaid_since'>;

export type SubscriptionChangeKind = 'upgrade' | 'downgrade_scheduled' | 'downgrade_cancelled' | 'downgrade_applied';

/** One plan change (migration 013); an upgrade keeps the proration it owes. */
export interface SubscriptionChangesTable {
  id: string;
  workspace_id: string;
  kind: SubscriptionChangeKind;
  from_plan: string;
  to_plan: string;
  /** Start of the period the change was made in. */
  period_start: string;
  /** When the plan changed (an upgrade: when made; a downgrade: the period's end). */
  effective_at: string;
  seconds_left: number | string;
  period_seconds: number | string;
  proration_cents: number | string;
  created_at: string;
}

export type InvoiceStatus = 'open' | 'paid' | 'void' | 'uncollectible';
/** Where an invoice's charge stands (migration 037, docs/billing.md#payments-with-stripe). */
export type PaymentStatus = 'none' | 'processing' | 'succeeded' | 'failed' | 'requires_action';
export type InvoiceLineKind = 'base' | 'proration' | 'overage';

/** A finalized invoice (migration 013): only its status (and paid_at, voided_at) ever changes. */
export interface InvoicesTable {
  id: string;
  workspace_id: string;
  /** INV-<number>, sequential per workspace. */
  number: number;
  period_start: string;
  period_end: string;
  /** The plan in force at the period's end. */
  plan: string;
  billable_requests: number | string;
  currency: 'usd';
  total_cents: number | string;
  status: InvoiceStatus;
  finalized_at: string;
  paid_at: string | null;
  voided_at: string | null;
  /** Migration 037: the charge's state, attempts begun, dunning, refunds. */
  payment_status: PaymentStatus;
  payment_attempts: number;
  first_failed_at: string | null;
  next_charge_at: string | null;
  refunded_cents: number | string;
}

/** An invoice as finalization inserts it: the payment columns start at their defaults. */
export type NewInvoice = Omit<
  InvoicesTable,
  'payment_status' | 'payment_attempts' | 'first_failed_at' | 'next_charge_at' | 'refunded_cents'
>;

/** One attempt to charge an invoice (migration 037), written before Stripe is called. */
export interface InvoicePaymentAttemptsTable {
  invoice_id: string;
  attempt: number;
  workspace_id: string;
  /** What the attempt asks Stripe for: a restart sends exactly this again under the same idempotency key. */
  amount_cents: number | string;
  customer_id: string;
  payment_method_id: string;
  payment_intent_id: string | null;
  /** `pending` until Stripe's answer is recorded. */
  outcome: 'pending' | Exclude<PaymentStatus, 'none'>;
  decline_code: string | null;
  message: string | null;
  started_at: string;
  finished_at: string | null;
}

/** A Stripe webhook event processed (migration 038): each id once. */
export interface StripeEventsTable {
  event_id: string;
  type: string;
  received_at: string;
}

/** A workspace's Stripe Customer and saved card (migration 036): ids and what may be shown, never the card. */
export interface BillingCustomersTable {
  workspace_id: string;
  customer_id: string;
  payment_method_id: string | null;
  card_brand: string | null;
  card_last4: string | null;
  card_exp_month: number | null;
  card_exp_year: number | null;
  card_updated_at: string | null;
  created_at: string;
}

export interface InvoiceLinesTable {
  invoice_id: string;
  position: number;
  kind: InvoiceLineKind;
  description: string;
  quantity: number | string;
  unit_price_cents: number | string;
  amount_cents: number | string;
}

/** A usage threshold notified for a workspace's period (migration 015): at most one row each. */
export interface UsageNoticesTable {
  workspace_id: string;
  period_start: string;
  /** 50, 80 or 100 (% of the included requests). */
  threshold: number;
  billable_requests: number | string;
  included_requests: number | string;
  created_at: string;
}

export interface Database {
  workspaces: WorkspacesTable;
  users: UsersTable;
  user_test_profiles: UserTestProfilesTable;
  api_keys: ApiKeysTable;
  resources: ResourcesTable;
  resource_counts: ResourceCountsTable;
  webhooks: WebhooksTable;
  idempotency_keys: IdempotencyKeysTable;
  events: EventsTable;
  deliveries: DeliveriesTable;
  delivery_attempts: DeliveryAttemptsTable;
  console_credentials: ConsoleCredentialsTable;
  console_sessions: ConsoleSessionsTable;
  console_links: ConsoleLinksTable;
  console_sign_in_failures: ConsoleSignInFailuresTable;
  console_mfa: ConsoleMfaTable;
  console_recovery_codes: ConsoleRecoveryCodesTable;
  console_passkeys: ConsolePasskeysTable;
  console_webauthn_challenges: ConsoleWebauthnChallengesTable;
  workspace_mfa_policies: WorkspaceMfaPoliciesTable;
  workspace_sso: WorkspaceSsoTable;
  sso_sign_ins: SsoSignInsTable;
  console_pending_sign_ins: ConsolePendingSignInsTable;
  usage_counts: UsageCountsTable;
  request_log: RequestLogTable;
  notifications: NotificationsTable;
  mailbox: MailboxTable;
  notification_preferences: NotificationPreferencesTable;
  subscriptions: SubscriptionsTable;
  subscription_changes: SubscriptionChangesTable;
  invoices: InvoicesTable;
  invoice_payment_attempts: InvoicePaymentAttemptsTable;
  billing_customers: BillingCustomersTable;
  stripe_events: StripeEventsTable;
  invoice_lines: InvoiceLinesTable;
  integrations: IntegrationsTable;
  integration_messages: IntegrationMessagesTable;
  usage_notices: UsageNoticesTable;
  audit_entries: AuditEntriesTable;
  audit_heads: AuditHeadsTable;
  audit_pending: AuditPendingTable;
  receiver_versions: ReceiverVersionsTable;
  exhausted_deliveries: ExhaustedDeliveriesTable;
  operator_deliveries: OperatorDeliveriesTable;
  exports: ExportsTable;
  workspace_tombstones: WorkspaceTombstonesTable;
}

/** A Slack or Discord destination (docs/integrations.md); `url` is a secret. */
export interface IntegrationsTable {
  id: string;
  workspace_id: string;
  kind: Platform;
  url: string;
  /** The environment whose resource events it forwards. */
  env: Env;
  /** JSON list of event types ('*' for all). */
  events: string;
  /** JSON list of notification categories. */
  categories: string;
  status: 'enabled' | 'disabled';
  created_at: string;
  updated_at: string;
}

/** One message to an integration: its log and outbox (docs/integrations.md#the-message-log). */
export interface IntegrationMessagesTable {
  id: string;
  integration_id: string;
  workspace_id: string;
  /** 'event', 'notification' or 'test'. */
  source: string;
  /** The event or notification type, or 'test'. */
  type: string;
  /** The JSON body sent (Block Kit or embed). */
  payload: string;
  status: 'pending' | 'sent' | 'failed' | 'cancelled';
  attempt_count: number;
  next_attempt_at: string | null;
  lease_until: string | null;
  leased_by: string | null;
  last_response_status: number | null;
  last_response_excerpt: string | null;
  last_error: string | null;
  sent_at: string | null;
  created_at: string;
}

/** One recorded change (docs/api.md#audit-log, migration 022); `hash` chains it to the workspace's previous entry. */
export interface AuditEntriesTable {
  id: string;
  workspace_id: string;
  seq: number;
  time: string;
  actor_type: 'user' | 'key' | 'system';
  actor_id: string;
  actor_name: string;
  actor_user_id: string | null;
  action: AuditAction;
  target_type: string;
  target_id: string;
  env: Env | null;
  /** JSON object: each changed field's before and after. */
  changes: string;
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
  /**
   * Hex salt of the commitments to the personal fields (actor_name, changes, ip, user_agent); null once the entry's
   * personal data was erased (migration 035, docs/api.md#audit-log).
   */
  personal_salt: string | null;
  /** JSON object: each personal field's salted SHA-256 commitment, which the chain hashes; null: an entry of the first form. */
  commitments: string | null;
  hash: string;
}

/** An entry its change committed and the sequencer has not numbered yet (migration 024); `pos` orders one process's. */
export type AuditPendingTable = Omit<AuditEntriesTable, 'seq' | 'hash' | 'personal_salt' | 'commitments'> & {
  pos: number;
};

/** Each workspace's last entry (seq, hash) and the anchor its chain starts from after a purge (migration 022). */
export interface AuditHeadsTable {
  workspace_id: string;
  seq: number;
  hash: string;
  anchor_seq: number;
  anchor_hash: string;
}

/**
 * Per workspace, the token of its events' receivers (webhooks and integrations), replaced by every change
 * to them (migration 025): what a process's cache of receivers is checked against.
 */
export interface ReceiverVersionsTable {
  workspace_id: string;
  version: string;
}

/** An event whose delivery to an endpoint used all its retries, told once (migration 028). */
export interface ExhaustedDeliveriesTable {
  event_id: string;
  webhook_id: string;
  created_at: string;
}

/** An archive of a workspace's data an admin asked for (migration 032, docs/data-lifecycle.md#export). */
export interface ExportsTable {
  id: string;
  workspace_id: string;
  /** The environment of the key that asked; null: the console or the CLI. */
  env: Env | null;
  /** Who asked: a user id, or `cli`. */
  requested_by: string;
  status: ExportStatus;
  /** Progress: the kinds of data written, of `kinds_total`, and the rows written so far. */
  kinds_done: number;
  kinds_total: number;
  rows_written: number | string;
  /** The finished archive's size and SHA-256 (hex); null until it is ready. */
  size_bytes: number | string | null;
  sha256: string | null;
  /** Why it failed (status `failed`). */
  error: string | null;
  /** How many runs started it (a run whose lease lapsed starts it again from scratch). */
  attempts: number;
  leased_by: string | null;
  lease_until: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** When the download stops (24 h after it is ready). */
  expires_at: string | null;
}
