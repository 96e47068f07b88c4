import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { DataOf, IdString, Timestamp } from '../../http/schemas.js';
import type { NotificationsService } from './notifications.service.js';

const hide = true;
const NotificationId = IdString('ntf_', 'ntf_01JQ8Z6Y9W3E5R7T9Y1U3I5O7P');

const FeedItemSchema = Type.Object({
  id: Type.String(),
  category: Type.String({ description: 'security | webhooks' }),
  type: Type.String({ description: 'e.g. key.created, endpoint.failing' }),
  title: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp,
  read_at: Type.Union([Timestamp, Type.Null()]),
});

const FeedQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional({ ...NotificationId, description: '`meta.next_cursor` of the previous page' }),
  },
  { additionalProperties: false },
);

const ReadBody = Type.Object(
  {
    ids: Type.Optional(Type.Array(NotificationId, { minItems: 1, maxItems: 100 })),
    all: Type.Optional(Type.Literal(true)),
  },
  { additionalProperties: false },
);

const Unread = Type.Object({ unread_count: Type.Integer() });

/**
 * The console's notification feed (docs/notifications.md#the-feed), under /console/api: the signed-in
 * person's notifications in the workspace they act in (X-Workspace-Id), with cursor paging and the
 * unread count; marking read. Session only, like the rest of the console's own API.
 */
export const notificationsRoutes: FastifyPluginAsyncTypebox<{ notifications: NotificationsService }> = async (
  app,
  { notifications },
) => {
  app.get(
    '/notifications',
    {
      config: { console: 'actor' },
      schema: {
        hide,
        querystring: FeedQuery,
        response: {
          200: Type.Object({
            data: Type.Array(FeedItemSchema),
            meta: Type.Object({ next_cursor: Type.Union([Type.String(), Type.Null()]), unread_count: Type.Integer() }),
          }),
        },
      },
    },
    async (req) => {
      const out = await notifications.feed(req.principal, { cursor: req.query.cursor, limit: req.query.limit ?? 20 });
      return { data: out.items, meta: { next_cursor: out.next_cursor, unread_count: out.unread_count } };
    },
  );

  app.post(
    '/notifications/read',
    { config: { console: 'actor' }, schema: { hide, body: ReadBody, response: { 200: DataOf(Unread) } } },
    async (req) => ({ data: await notifications.markRead(req.principal, req.body) }),
  );
};
