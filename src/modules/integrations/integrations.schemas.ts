import { type Static, Type } from '@sinclair/typebox';
import { ENVIRONMENTS } from '../../kernel/environments.js';
import { CHAT_SUBSCRIBABLE_EVENTS } from '../../kernel/event-types.js';
import { FEED_CATEGORIES } from '../../kernel/notification-types.js';
import { PLATFORMS } from '../../kernel/platforms.js';
import { IdString, Timestamp } from '../../kernel/schemas.js';

// The console's integrations API (docs/integrations.md#the-console-api): request and answer shapes.
export const IntegrationId = IdString('int_', 'int_01JQ8Z6Y9W3E5R7T9Y1U3I5O7P');
export const IntegrationParams = Type.Object({ id: IntegrationId }, { additionalProperties: false });

const Kind = Type.Union(PLATFORMS.map((k) => Type.Literal(k)));
const Env = Type.Union(ENVIRONMENTS.map((e) => Type.Literal(e)));
const Events = Type.Array(Type.Union(CHAT_SUBSCRIBABLE_EVENTS.map((e) => Type.Literal(e))), {
  maxItems: 10,
  uniqueItems: true,
  description: 'Resource event types of `env` to forward; `*` for all.',
});
const Categories = Type.Array(Type.Union(FEED_CATEGORIES.map((c) => Type.Literal(c))), {
  maxItems: FEED_CATEGORIES.length,
  uniqueItems: true,
  description: 'Notification categories to forward.',
});

export const CreateIntegrationBody = Type.Object(
  {
    kind: Kind,
    url: Type.String({ minLength: 1, maxLength: 2048 }),
    env: Env,
    events: Events,
    categories: Categories,
  },
  { additionalProperties: false },
);

export const UpdateIntegrationBody = Type.Object(
  {
    env: Type.Optional(Env),
    events: Type.Optional(Events),
    categories: Type.Optional(Categories),
    status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const IntegrationSchema = Type.Object({
  id: Type.String(),
  kind: Kind,
  url_hint: Type.String({ description: 'The URL is a secret: only its host and last 4 characters.' }),
  env: Env,
  events: Type.Array(Type.String()),
  categories: Type.Array(Type.String()),
  status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export const MessagesQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })) },
  { additionalProperties: false },
);

const NullableString = Type.Union([Type.String(), Type.Null()]);
export const IntegrationMessageSchema = Type.Object({
  id: Type.String(),
  source: Type.String({ description: 'event | notification | test' }),
  type: Type.String(),
  status: Type.String({ description: 'pending | sent | failed | cancelled' }),
  attempt_count: Type.Integer(),
  next_attempt_at: NullableString,
  last_response_status: Type.Union([Type.Integer(), Type.Null()]),
  last_response_excerpt: NullableString,
  last_error: NullableString,
  sent_at: NullableString,
  created_at: Timestamp,
  payload: Type.Unknown(),
});

export type Integration = Static<typeof IntegrationSchema>;
export type IntegrationMessageItem = Static<typeof IntegrationMessageSchema>;
