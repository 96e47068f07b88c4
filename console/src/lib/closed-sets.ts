import type {
  AuditAction,
  ChatSubscribableEvent,
  DeliveryStatus,
  Env,
  EventType,
  FeedCategory,
  Platform,
  Role,
  Scope,
  SubscribableEvent,
} from '../api/types';

/**
 * The console's lists of the server's closed sets. The console imports server types only, so it
 * spells the values out; `every<T>()` makes each list fail the type check unless it holds every
 * member of the server's union and nothing else.
 */
const every =
  <T extends string>() =>
  <const A extends readonly T[]>(
    values: A & ([T] extends [A[number]] ? unknown : { missing: Exclude<T, A[number]> }),
  ) =>
    values as A;

export const ROLES = every<Role>()(['admin', 'member', 'viewer']);
export const ENVIRONMENTS = every<Env>()(['live', 'test']);
export const DELIVERY_STATUSES = every<DeliveryStatus>()(['pending', 'succeeded', 'failed', 'cancelled']);
export const EVENT_TYPES = every<EventType>()([
  'resource.created',
  'resource.updated',
  'resource.status_changed',
  'resource.deleted',
  'key.created',
  'key.revoked',
  'key.rolled',
  'key.expiring',
  'member.invited',
  'member.joined',
  'member.role_changed',
  'member.removed',
  'webhook.disabled',
  'webhook.enabled',
  'delivery.exhausted',
  'usage.threshold',
  'usage.cap_reached',
  'invoice.finalized',
  'invoice.payment_succeeded',
  'invoice.payment_failed',
  'workspace.deletion_scheduled',
  'workspace.deletion_cancelled',
  'export.ready',
]);
export const SCOPES = every<Scope>()([
  'users:read',
  'users:write',
  'resources:read',
  'resources:write',
  'events:read',
  'webhooks:read',
  'webhooks:write',
  'keys:read',
  'keys:write',
  'usage:read',
  'requests:read',
  'billing:read',
  'audit:read',
  'exports:write',
  'workspace:write',
]);
/** What a webhook subscribes to: `*` (every type) or one type. */
export const SUBSCRIBABLE_EVENTS = every<SubscribableEvent>()(['*', ...EVENT_TYPES]);
/** What a chat integration subscribes to: `*` (every resource event) or one resource event type. */
export const CHAT_SUBSCRIBABLE_EVENTS = every<ChatSubscribableEvent>()([
  '*',
  'resource.created',
  'resource.updated',
  'resource.status_changed',
  'resource.deleted',
]);
export const PLATFORMS = every<Platform>()(['slack', 'discord']);
/** The notification categories of the feed, the preferences and the integrations. */
export const FEED_CATEGORIES = every<FeedCategory>()(['security', 'webhooks', 'usage', 'billing']);
/** What the audit log records (its action filter). */
export const AUDIT_ACTIONS = every<AuditAction>()([
  'key.created',
  'key.revoked',
  'key.rolled',
  'member.invited',
  'member.role_changed',
  'member.removed',
  'user.updated',
  'user.password_changed',
  'user.mfa_enabled',
  'user.mfa_disabled',
  'user.mfa_reset',
  'user.passkey_added',
  'user.passkey_removed',
  'user.passkey_renamed',
  'user.recovery_codes_regenerated',
  'user.reset_link_created',
  'user.erased',
  'session.signed_in',
  'session.sign_in_failed',
  'session.signed_out',
  'resource.created',
  'resource.updated',
  'resource.archived',
  'resource.unarchived',
  'resource.deleted',
  'webhook.created',
  'webhook.updated',
  'webhook.disabled',
  'webhook.enabled',
  'webhook.deleted',
  'webhook.secret_rotated',
  'delivery.retried',
  'integration.created',
  'integration.updated',
  'integration.deleted',
  'plan.changed',
  'invoice.finalized',
  'invoice.marked_paid',
  'invoice.voided',
  'invoice.payment_succeeded',
  'invoice.payment_failed',
  'invoice.refunded',
  'payment_method.updated',
  'subscription.unpaid',
  'subscription.reactivated',
  'workspace.created',
  'workspace.settings_changed',
  'export.created',
  'workspace.deletion_scheduled',
  'workspace.deletion_cancelled',
  'sso.configured',
  'audit.purged',
  'audit.chain_migrated',
  'secrets.key_rotated',
  'events.purged',
  'request_log.purged',
  'usage.purged',
  'idempotency.purged',
  'notifications.purged',
  'integration_messages.purged',
]);
