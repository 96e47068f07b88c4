import { createReadStream } from 'node:fs';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, DataOf, errorResponses, IdParam, ListOf } from '../../kernel/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import { ExportSchema, ListExportsQuery } from './exports.schemas.js';
import type { ExportsService } from './exports.service.js';

const tags = ['Exports'];
const Params = IdParam('exp_', 'exp_01JD3K8Z6W6J9Q4X1V5N2M7P8R');
const Archive = Type.String({
  format: 'binary',
  description: 'The archive: a .tar.gz of manifest.json and NDJSON files.',
});

/** HTTP for /v1/exports (docs/data-lifecycle.md#export): archives of the whole workspace, admins only (scope exports:write). */
export const exportsRoutes: FastifyPluginAsyncTypebox<{ exports: ExportsService }> = async (app, { exports }) => {
  app.post(
    '/exports',
    {
      config: { scope: 'exports:write' },
      schema: {
        tags,
        summary: 'Request an export of the workspace',
        operationId: 'createExport',
        description:
          'Queues an archive of the whole workspace (both environments): members, keys without their hashes, ' +
          'resources, webhooks without their secrets, events, the last 30 days of deliveries, usage roll-ups, ' +
          'invoices and the audit log with its hashes. The worker writes it; follow `GET /v1/exports/{id}`. ' +
          'Admins only. Accepts `Idempotency-Key`.',
        response: { 202: DataOf(Type.Ref(ExportSchema)), ...errorResponses(...AUTHED_ERRORS, 409) },
      },
    },
    async (req, reply) =>
      reply.code(202).send({ data: await exports.request(req.unit(reply, 202), req.principal.workspaceId) }),
  );

  app.get(
    '/exports',
    {
      config: { scope: 'exports:write' },
      schema: {
        tags,
        summary: 'List exports',
        operationId: 'listExports',
        description:
          "The workspace's exports, newest first, paged like the other lists: each with its status, progress, size " +
          'and expiry. A key sees those asked for in its own environment and those asked for from the console or ' +
          'the CLI. Admins only.',
        querystring: ListExportsQuery,
        response: { 200: ListOf(Type.Ref(ExportSchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => {
      // Newest first only: the cursor it issues says so (lib/paging.ts).
      const page = await exports.list(req.principal, toPageRequest({ ...req.query, order: 'desc' }, 'export'));
      return { data: page.items, meta: pageMeta(page) };
    },
  );

  app.get(
    '/exports/:id',
    {
      config: { scope: 'exports:write' },
      schema: {
        tags,
        summary: 'Get an export',
        operationId: 'getExport',
        description: 'Its status (`queued`, `running`, `ready`, `failed`, `expired`), progress, size and expiry.',
        params: Params,
        response: { 200: DataOf(Type.Ref(ExportSchema)), ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req) => ({ data: await exports.get(req.principal, req.params.id) }),
  );

  app.get(
    '/exports/:id/download',
    {
      config: { scope: 'exports:write' },
      schema: {
        tags,
        summary: 'Download an export',
        operationId: 'downloadExport',
        description:
          'The archive (`application/gzip`), for 24 h after it is ready; 409 `export_not_ready` before, ' +
          '410 `export_expired` after.',
        params: Params,
        response: {
          200: { content: { 'application/gzip': { schema: Archive } } },
          ...errorResponses(...AUTHED_ERRORS, 404, 409, 410),
        },
      },
    },
    async (req, reply) => {
      const file = await exports.download(req.principal, req.params.id);
      return (
        reply
          .type('application/gzip')
          .header('content-length', String(file.size))
          .header('content-disposition', `attachment; filename="${file.filename}"`)
          // The schema types the body as the archive's bytes (a string); Fastify streams the file.
          .send(createReadStream(file.path) as unknown as string)
      );
    },
  );
};
