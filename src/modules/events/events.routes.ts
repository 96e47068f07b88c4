import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, DataOf, errorResponses, IdParam, RetainedListOf } from '../../kernel/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import { EventSchema, ListEventsQuery } from './events.schemas.js';
import type { EventsService } from './events.service.js';

const tags = ['Events'];

/** HTTP for /v1/events (docs/api.md#events): what happened in the caller's workspace and environment, 30 days back. */
export const eventsRoutes: FastifyPluginAsyncTypebox<{
  events: EventsService;
  /** EVENT_RETENTION_DAYS, told in `meta.retention_days`. */
  retentionDays: number;
}> = async (app, { events, retentionDays }) => {
  app.get(
    '/events',
    {
      config: { scope: 'events:read' },
      schema: {
        tags,
        summary: 'List events',
        operationId: 'listEvents',
        description:
          'Oldest first (`order=desc`: newest first); filter by `event` type and `resource_id`; paging. Kept 30 days.',
        querystring: ListEventsQuery,
        response: { 200: RetainedListOf(Type.Ref(EventSchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => {
      const { event, resource_id, ...paging } = req.query;
      const page = await events.list(req.principal, { event, resource_id }, toPageRequest(paging, 'event'));
      return { data: page.items, meta: { ...pageMeta(page), retention_days: retentionDays } };
    },
  );

  app.get(
    '/events/:id',
    {
      config: { scope: 'events:read' },
      schema: {
        tags,
        summary: 'Get an event',
        operationId: 'getEvent',
        description: 'The same object a webhook receives as its body.',
        params: IdParam('evt_', 'evt_01JD3K9A1B2C3D4E5F6G7H8J9K'),
        response: { 200: DataOf(Type.Ref(EventSchema)), ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req) => ({ data: await events.get(req.principal, req.params.id) }),
  );
};
