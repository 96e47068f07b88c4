/**
 * docs/api.md#events: the event catalogue, the one definition, used by the database types, the
 * schemas, the services and (type-only) the console. `*` in a webhook's `events` subscribes to all,
 * current and future.
 */
/** What happens to a resource: to the endpoints of the resource's environment. */
export const RESOURCE_EVENT_TYPES = [
  'resource.created',
  'resource.updated',
  'resource.status_changed',
  'resource.deleted',
] as const;
export type ResourceEventType = (typeof RESOURCE_EVENT_TYPES)[number];

/**
 * What happens to the workspace itself (docs/api.md#platform-events): key events go to the key's environment,
 * webhook and delivery events to the endpoint's, every other one to live endpoints.
 */
export const PLATFORM_EVENT_TYPES = [
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
] as const;
export type PlatformEventType = (typeof PLATFORM_EVENT_TYPES)[number];

export const EVENT_TYPES = [...RESOURCE_EVENT_TYPES, ...PLATFORM_EVENT_TYPES] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Sent by `POST /webhooks/{id}/test` to that endpoint only; `*` does not subscribe to it. */
export const TEST_EVENT_TYPE = 'webhook.test';
/** Every type an event can have: the catalogue and the test event. */
export const ALL_EVENT_TYPES = [...EVENT_TYPES, TEST_EVENT_TYPE] as const;
export type AnyEventType = (typeof ALL_EVENT_TYPES)[number];

/** What a webhook subscribes to: a catalogue type, or `*` for every one (current and future). */
export const SUBSCRIBABLE_EVENTS = ['*', ...EVENT_TYPES] as const;
export type SubscribableEvent = (typeof SUBSCRIBABLE_EVENTS)[number];

/**
 * What a chat integration subscribes to: a resource event type, or `*` for every one. What happens to the
 * workspace itself reaches chats as notifications (their categories), never twice.
 */
export const CHAT_SUBSCRIBABLE_EVENTS = ['*', ...RESOURCE_EVENT_TYPES] as const;
export type ChatSubscribableEvent = (typeof CHAT_SUBSCRIBABLE_EVENTS)[number];

/** True for the resource events (the only catalogue events chat integrations forward). */
export function isResourceEventType(type: string): type is ResourceEventType {
  return (RESOURCE_EVENT_TYPES as readonly string[]).includes(type);
}

/**
 * Instance-wide events for the operator of the service (docs/api.md#operator-events), sent to OPERATOR_WEBHOOK_URL
 * only, never to a workspace's endpoints.
 */
export const OPERATOR_EVENT_TYPES = [
  'workspace.created',
  'workspace.deleted',
  'invoice.payment_failed',
  'subscription.unpaid',
] as const;
export type OperatorEventType = (typeof OPERATOR_EVENT_TYPES)[number];
