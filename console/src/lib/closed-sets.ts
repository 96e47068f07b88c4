import type {
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
]);
/** What a webhook or an integration subscribes to: `*` (every type) or one type. */
export const SUBSCRIBABLE_EVENTS = every<SubscribableEvent>()([
  '*',
  'resource.created',
  'resource.updated',
  'resource.status_changed',
  'resource.deleted',
]);
export const PLATFORMS = every<Platform>()(['slack', 'discord']);
/** The notification categories of the feed, the preferences and the integrations. */
export const FEED_CATEGORIES = every<FeedCategory>()(['security', 'webhooks', 'usage', 'billing']);
