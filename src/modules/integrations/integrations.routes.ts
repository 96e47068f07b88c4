import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { DataOf } from '../../kernel/schemas.js';
import {
  CreateIntegrationBody,
  IntegrationMessageSchema,
  IntegrationParams,
  IntegrationSchema,
  MessagesQuery,
  UpdateIntegrationBody,
} from './integrations.schemas.js';
import type { IntegrationsService } from './integrations.service.js';

const hide = true;
const NoContent = Type.Null({ description: 'Done' });

/**
 * Slack and Discord integrations (docs/integrations.md#the-console-api), under /console/api: the
 * workspace's admins (X-Workspace-Id) list, connect, change, delete, test and read the message log.
 * Session and CSRF like the rest of the console's own API; there is no /v1 route (no API key scope covers integrations).
 */
export const integrationsRoutes: FastifyPluginAsyncTypebox<{ integrations: IntegrationsService }> = async (
  app,
  { integrations },
) => {
  app.get(
    '/integrations',
    { config: { console: 'actor' }, schema: { hide, response: { 200: DataOf(Type.Array(IntegrationSchema)) } } },
    async (req) => ({ data: await integrations.list(req.principal) }),
  );

  app.post(
    '/integrations',
    {
      config: { console: 'actor' },
      schema: { hide, body: CreateIntegrationBody, response: { 201: DataOf(IntegrationSchema) } },
    },
    async (req, reply) => reply.code(201).send({ data: await integrations.create(req.unit(), req.body) }),
  );

  app.patch(
    '/integrations/:id',
    {
      config: { console: 'actor' },
      schema: {
        hide,
        params: IntegrationParams,
        body: UpdateIntegrationBody,
        response: { 200: DataOf(IntegrationSchema) },
      },
    },
    async (req) => ({ data: await integrations.update(req.unit(), req.params.id, req.body) }),
  );

  app.delete(
    '/integrations/:id',
    { config: { console: 'actor' }, schema: { hide, params: IntegrationParams, response: { 204: NoContent } } },
    async (req, reply) => {
      await integrations.remove(req.unit(), req.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/integrations/:id/test',
    {
      config: { console: 'actor' },
      schema: { hide, params: IntegrationParams, response: { 202: DataOf(IntegrationMessageSchema) } },
    },
    async (req, reply) => reply.code(202).send({ data: await integrations.test(req.unit(), req.params.id) }),
  );

  app.get(
    '/integrations/:id/messages',
    {
      config: { console: 'actor' },
      schema: {
        hide,
        params: IntegrationParams,
        querystring: MessagesQuery,
        response: { 200: DataOf(Type.Array(IntegrationMessageSchema)) },
      },
    },
    async (req) => ({ data: await integrations.messages(req.principal, req.params.id, req.query.limit ?? 50) }),
  );
};
