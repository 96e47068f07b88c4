import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, DataOf, ErrorSchema, errorResponses } from '../../kernel/schemas.js';
import type { WorkspaceDeletion } from './workspace-deletion.service.js';
import { DeleteWorkspaceBody, WorkspaceDeletionSchema } from './workspaces.schemas.js';

const tags = ['Workspace'];

/** HTTP for /v1/workspace (docs/data-lifecycle.md#deleting-a-workspace): an admin schedules its deletion. */
export const workspacesRoutes: FastifyPluginAsyncTypebox<{ deletion: WorkspaceDeletion }> = async (
  app,
  { deletion },
) => {
  app.delete(
    '/workspace',
    {
      config: { scope: 'workspace:write' },
      schema: {
        tags,
        operationId: 'deleteWorkspace',
        summary: 'Schedule the deletion of the workspace',
        description:
          "Schedules the deletion of the key's workspace; `confirm` must be its name. From then on every key of the " +
          'workspace answers 401 `workspace_deleted` (this one included), its webhook deliveries are held (the ' +
          '`workspace.deletion_scheduled` event itself is delivered) and every member is emailed. An admin can cancel ' +
          'it in the console, or an operator with `wsvc workspaces cancel-deletion`, until `delete_at` ' +
          '(WORKSPACE_DELETION_GRACE_DAYS later); then its rows are deleted, except its finalized invoices. ' +
          'Admins only (scope `workspace:write`); 409 `deletion_scheduled` if it is already scheduled.',
        body: DeleteWorkspaceBody,
        response: {
          202: DataOf(WorkspaceDeletionSchema),
          ...errorResponses(...AUTHED_ERRORS),
          409: Type.Ref(ErrorSchema, { description: 'deletion_scheduled: already scheduled' }),
        },
      },
    },
    async (req, reply) =>
      reply.code(202).send({ data: await deletion.schedule(req.unit(), req.principal.workspaceId, req.body) }),
  );
};

/**
 * The console's own routes for a workspace's deletion, session only (docs/console.md): its state for the banner
 * (any member), and "Cancel deletion" (admins). Scheduling goes through the /v1 mirror.
 */
export const workspacesConsoleRoutes: FastifyPluginAsyncTypebox<{ deletion: WorkspaceDeletion }> = async (
  app,
  { deletion },
) => {
  app.get(
    '/workspace/deletion',
    { config: { console: 'actor' }, schema: { hide: true, response: { 200: DataOf(WorkspaceDeletionSchema) } } },
    async (req) => ({ data: await deletion.state(req.principal.workspaceId) }),
  );

  app.post(
    '/workspace/deletion/cancel',
    { config: { console: 'actor' }, schema: { hide: true, response: { 200: DataOf(WorkspaceDeletionSchema) } } },
    async (req) => ({ data: await deletion.cancel(req.unit(), req.principal.workspaceId) }),
  );
};
