// The console's request and response types come from the server's TypeBox schemas (Static<>),
// so a change of the API contract fails the console's type check instead of a page at run time.

export type {
  ConsoleSession,
  Invited,
  Membership,
  PendingInvite,
  SessionInfo,
} from '../../../src/modules/console-auth/console-auth.schemas.js';
export type { Event } from '../../../src/modules/events/events.schemas.js';
export type { ApiKey, CreatedApiKey, RolledApiKey } from '../../../src/modules/keys/keys.schemas.js';
export type { Resource } from '../../../src/modules/resources/resources.schemas.js';
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
}
export interface List<T> {
  data: T[];
  meta: PageMeta;
}
export type Env = 'live' | 'test';
export type Role = 'admin' | 'member' | 'viewer';
