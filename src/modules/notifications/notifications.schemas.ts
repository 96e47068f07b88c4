import { type Static, Type } from '@sinclair/typebox';
import { FEED_CATEGORIES } from '../../kernel/notification-types.js';
import { IdString, Timestamp } from '../../kernel/schemas.js';

// The console's notification feed (docs/notifications.md#the-feed): request and answer shapes.
export const NotificationId = IdString('ntf_', 'ntf_01JQ8Z6Y9W3E5R7T9Y1U3I5O7P');

export const FeedItemSchema = Type.Object({
  id: Type.String(),
  category: Type.String({ description: 'security | webhooks | usage | billing' }),
  type: Type.String({ description: 'e.g. key.created, endpoint.failing, usage.threshold, invoice.issued' }),
  title: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp,
  read_at: Type.Union([Timestamp, Type.Null()]),
});

export const FeedQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional({ ...NotificationId, description: '`meta.next_cursor` of the previous page' }),
  },
  { additionalProperties: false },
);

export const ReadBody = Type.Object(
  {
    ids: Type.Optional(Type.Array(NotificationId, { minItems: 1, maxItems: 100 })),
    all: Type.Optional(Type.Literal(true)),
  },
  { additionalProperties: false },
);

export const Unread = Type.Object({ unread_count: Type.Integer() });

const FeedCategorySchema = Type.Union(FEED_CATEGORIES.map((c) => Type.Literal(c)));

export const PreferenceSchema = Type.Object({
  category: FeedCategorySchema,
  email: Type.Boolean(),
  in_app: Type.Boolean(),
  locked: Type.Boolean({ description: 'true: cannot be turned off (security)' }),
});

export const PreferencesBody = Type.Object(
  {
    preferences: Type.Array(
      Type.Object(
        {
          category: FeedCategorySchema,
          email: Type.Boolean(),
          in_app: Type.Boolean(),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: FEED_CATEGORIES.length },
    ),
  },
  { additionalProperties: false },
);

export type NotificationPreferenceItem = Static<typeof PreferenceSchema>;
export type NotificationItem = Static<typeof FeedItemSchema>;
export interface NotificationFeed {
  data: NotificationItem[];
  meta: { next_cursor: string | null; unread_count: number };
}
