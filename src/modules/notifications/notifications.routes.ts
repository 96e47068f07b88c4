import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { DataOf } from '../../kernel/schemas.js';
import {
  FeedItemSchema,
  FeedQuery,
  PreferenceSchema,
  PreferencesBody,
  ReadBody,
  Unread,
} from './notifications.schemas.js';
import type { NotificationsService } from './notifications.service.js';

const hide = true;

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
    async (req) => ({ data: await notifications.markRead(req.unit(), req.body) }),
  );

  app.get(
    '/notifications/preferences',
    { config: { console: 'actor' }, schema: { hide, response: { 200: DataOf(Type.Array(PreferenceSchema)) } } },
    async (req) => ({ data: await notifications.preferences(req.principal) }),
  );

  app.put(
    '/notifications/preferences',
    {
      config: { console: 'actor' },
      schema: { hide, body: PreferencesBody, response: { 200: DataOf(Type.Array(PreferenceSchema)) } },
    },
    async (req) => ({ data: await notifications.setPreferences(req.unit(), req.body.preferences) }),
  );
};
