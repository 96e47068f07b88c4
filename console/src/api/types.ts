// The console's response types come from the server's TypeBox schemas (Static<>), type-only, so a
// change of a response fails the console's type check instead of a page at run time (request
// bodies are written by hand in the pages and are not checked this way).

export type { AuditEntry } from '../../../src/modules/audit/audit.schemas.js';
export type {
  Invoice,
  InvoiceLine,
  PlanChangeOut,
  PlanOut as Plan,
  Subscription,
  UpcomingInvoice,
} from '../../../src/modules/billing/billing.schemas.js';
export type {
  ConsoleSession,
  LinkInfo,
  Membership,
  SecondFactorNeeded,
  SessionInfo,
} from '../../../src/modules/console-auth/console-auth.schemas.js';
export type { Event } from '../../../src/modules/events/events.schemas.js';
export type { Export } from '../../../src/modules/exports/exports.schemas.js';
export type { Integration, IntegrationMessageItem } from '../../../src/modules/integrations/integrations.schemas.js';
export type { ApiKey, CreatedApiKey, RolledApiKey } from '../../../src/modules/keys/keys.schemas.js';
export type { Invited, PendingInvite } from '../../../src/modules/members/members.schemas.js';
export type {
  MemberFactor,
  Passkey,
  Policy,
  RecoveryCodes,
  TotpEnrolment,
  TwoFactorStatus,
} from '../../../src/modules/mfa/mfa.schemas.js';
export type {
  NotificationFeed,
  NotificationItem,
  NotificationPreferenceItem,
} from '../../../src/modules/notifications/notifications.schemas.js';
export type { Resource } from '../../../src/modules/resources/resources.schemas.js';
export type { SsoSettingsOut, SsoState } from '../../../src/modules/sso/sso.schemas.js';
export type { LoggedRequest, UsageSeries } from '../../../src/modules/usage/usage.schemas.js';
export type { User } from '../../../src/modules/users/users.schemas.js';
export type {
  CreatedWebhook,
  Delivery,
  DeliveryDetail,
  DeliverySummary,
  Webhook,
} from '../../../src/modules/webhooks/webhooks.schemas.js';

export interface PageMeta {
  total: number;
  limit: number;
  offset: number;
  next_cursor: string | null;
  /** Lists of records kept a limited time: how many days (docs/settings.md#retention). */
  retention_days?: number;
}
export interface List<T> {
  data: T[];
  meta: PageMeta;
}

export type { DeliveryStatus } from '../../../src/kernel/delivery-statuses.js';
// The closed sets, defined once on the server (type-only: the console bundles no server code).
export type { Env } from '../../../src/kernel/environments.js';
export type { ChatSubscribableEvent, EventType, SubscribableEvent } from '../../../src/kernel/event-types.js';
export type { FeedCategory } from '../../../src/kernel/notification-types.js';
export type { Platform } from '../../../src/kernel/platforms.js';
export type { Role } from '../../../src/kernel/roles.js';
export type { Scope } from '../../../src/kernel/scopes.js';
export type { AuditAction } from '../../../src/modules/audit/audit.catalogue.js';
export type { DeletionState as WorkspaceDeletion } from '../../../src/modules/workspaces/workspace-deletion.service.js';
