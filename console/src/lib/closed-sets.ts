import type { DeliveryStatus, Env, EventType, Role, Scope } from '../api/types';

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
]);
