/**
 * docs/api.md#events: the event catalogue, the one definition, used by the database types, the
 * schemas, the services and (type-only) the console. `*` in a webhook's `events` subscribes to all,
 * current and future.
 */
export const EVENT_TYPES = [
  'resource.created',
  'resource.updated',
  'resource.status_changed',
  'resource.deleted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Sent by `POST /webhooks/{id}/test` to that endpoint only; `*` does not subscribe to it. */
export const TEST_EVENT_TYPE = 'webhook.test';
/** Every type an event can have: the catalogue and the test event. */
export const ALL_EVENT_TYPES = [...EVENT_TYPES, TEST_EVENT_TYPE] as const;
export type AnyEventType = (typeof ALL_EVENT_TYPES)[number];

/** What a webhook or an integration subscribes to: a catalogue type, or `*` for every one (current and future). */
export const SUBSCRIBABLE_EVENTS = ['*', ...EVENT_TYPES] as const;
export type SubscribableEvent = (typeof SUBSCRIBABLE_EVENTS)[number];
