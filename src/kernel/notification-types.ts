/**
 * Every notification type by its category (docs/notifications.md): the one definition, used by the
 * database types, the schemas, the services, the integrations that forward them and (type-only) the
 * console. `account` (invites, password resets) goes by email only: not in the feed, no preference.
 */
export const NOTIFICATION_TYPES_BY_CATEGORY = {
  webhooks: ['endpoint.failing', 'endpoint.disabled', 'endpoint.recovered'],
  security: [
    'key.created',
    'key.revoked',
    'key.rolled',
    'key.expiring',
    'password.changed',
    'member.added',
    'member.removed',
    'member.role_changed',
    'mfa.enabled',
    'mfa.disabled',
    'mfa.reset',
    'mfa.code_reused',
    'recovery_codes.regenerated',
    'recovery_code.used',
    'passkey.added',
    'passkey.removed',
    'sso.configured',
    'workspace.settings_changed',
    'workspace.deletion_scheduled',
    'workspace.deletion_cancelled',
  ],
  account: ['invite', 'password.reset'],
  usage: ['usage.threshold'],
  billing: ['invoice.issued', 'invoice.payment_failed'],
} as const;

type ByCategory = typeof NOTIFICATION_TYPES_BY_CATEGORY;
export type NotificationCategory = keyof ByCategory;
export type NotificationType = ByCategory[NotificationCategory][number];
/** The types of one category. */
export type NotificationTypeOf<C extends NotificationCategory> = ByCategory[C][number];

export const NOTIFICATION_TYPES = Object.values(NOTIFICATION_TYPES_BY_CATEGORY).flat() as NotificationType[];

/** The categories a person chooses channels for, and integrations forward (`security` always on, `account` never). */
export const FEED_CATEGORIES = ['security', 'webhooks', 'usage', 'billing'] as const;
export type FeedCategory = (typeof FEED_CATEGORIES)[number];
/** The feed's categories that can be turned off (docs/notifications.md#preferences). */
export const OPTIONAL_CATEGORIES = ['webhooks', 'usage', 'billing'] as const satisfies readonly FeedCategory[];
export type OptionalCategory = (typeof OPTIONAL_CATEGORIES)[number];
