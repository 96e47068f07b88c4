import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, DataOf, errorResponses, IdParam, ListOf } from '../../kernel/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import { CreateResourceBody, ListResourcesQuery, ResourceSchema, UpdateResourceBody } from './resources.schemas.js';
import type { ResourcesService } from './resources.service.js';

const Params = IdParam('res_', 'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R');
const One = DataOf(Type.Ref(ResourceSchema));
const tags = ['Resources'];

/** HTTP for /v1/resources: schema, call the service, shape the reply. */
export const resourcesRoutes: FastifyPluginAsyncTypebox<{ resources: ResourcesService }> = async (
  app,
  { resources },
) => {
  app.post(
    '/resources',
    {
      config: { scope: 'resources:write' },
      schema: {
        tags,
        summary: 'Create a resource',
        operationId: 'createResource',
        description: 'Creates an `active` resource. Accepts `Idempotency-Key`.',
        body: CreateResourceBody,
        response: { 201: One, ...errorResponses(...AUTHED_ERRORS, 409, 413, 415) },
      },
    },
    async (req, reply) => reply.code(201).send({ data: await resources.create(req.unit(reply, 201), req.body) }),
  );

  app.get(
    '/resources',
    {
      config: { scope: 'resources:read' },
      schema: {
        tags,
        summary: 'List resources',
        operationId: 'listResources',
        description:
          'Oldest first (`order=desc`: newest first). Page with `offset` or with `cursor`; filter by `status`, `type` and `name_prefix`.',
        querystring: ListResourcesQuery,
        response: { 200: ListOf(Type.Ref(ResourceSchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => {
      const { status, type, name_prefix, ...paging } = req.query;
      const page = await resources.list(
        req.principal,
        { status, type, name_prefix },
        toPageRequest(paging, 'resource'),
      );
      return { data: page.items, meta: pageMeta(page) };
    },
  );

  app.get(
    '/resources/:id',
    {
      config: { scope: 'resources:read' },
      schema: {
        tags,
        summary: 'Get a resource',
        operationId: 'getResource',
        description:
          "One resource of the caller's workspace and environment; 404 for an id of another workspace or environment.",
        params: Params,
        response: { 200: One, ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req) => ({ data: await resources.get(req.principal, req.params.id) }),
  );

  app.put(
    '/resources/:id',
    {
      config: { scope: 'resources:write' },
      schema: {
        tags,
        summary: 'Update a resource',
        operationId: 'updateResource',
        description: 'Changes `name` and/or replaces `metadata` whole; `type` and `status` are refused.',
        params: Params,
        body: UpdateResourceBody,
        response: { 200: One, ...errorResponses(...AUTHED_ERRORS, 404, 413, 415) },
      },
    },
    async (req) => ({ data: await resources.update(req.unit(), req.params.id, req.body) }),
  );

  app.delete(
    '/resources/:id',
    {
      config: { scope: 'resources:write' },
      schema: {
        tags,
        summary: 'Delete a resource',
        operationId: 'deleteResource',
        description: 'Irreversible; removes its events too. A second delete is 404.',
        params: Params,
        response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req, reply) => {
      await resources.remove(req.unit(), req.params.id);
      return reply.code(204).send(null);
    },
  );

  for (const action of ['archive', 'unarchive'] as const) {
    app.post(
      `/resources/:id/${action}`,
      {
        config: { scope: 'resources:write' },
        schema: {
          tags,
          summary: action === 'archive' ? 'Archive a resource' : 'Unarchive a resource',
          operationId: action === 'archive' ? 'archiveResource' : 'unarchiveResource',
          description:
            action === 'archive'
              ? '`active → archived`. Archiving an archived resource answers 200 and changes nothing.'
              : '`archived → active`. Unarchiving an active resource answers 200 and changes nothing.',
          params: Params,
          response: { 200: One, ...errorResponses(...AUTHED_ERRORS, 404, 409) },
        },
      },
      async (req, reply) => ({
        data: await resources[action](req.unit(reply, 200), req.params.id),
      }),
    );
  }
};
