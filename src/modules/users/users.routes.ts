import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, DataOf, errorResponses, ListOf } from '../../kernel/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import { ListUsersQuery, PatchMeBody, UserSchema } from './users.schemas.js';
import type { UsersService } from './users.service.js';

const tags = ['Users'];
const One = DataOf(Type.Ref(UserSchema));

/** HTTP for /v1/users. */
export const usersRoutes: FastifyPluginAsyncTypebox<{ users: UsersService }> = async (app, { users }) => {
  app.get(
    '/users/me',
    {
      config: { scope: 'users:read' },
      schema: {
        tags,
        summary: 'Get my profile',
        operationId: 'getMyProfile',
        description: 'The key owner. Test keys read the sandbox overlay of the profile.',
        response: { 200: One, ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => ({ data: await users.me(req.principal) }),
  );

  app.patch(
    '/users/me',
    {
      config: { scope: 'users:write' },
      schema: {
        tags,
        summary: 'Update my profile',
        operationId: 'updateMyProfile',
        description:
          'Changes `name` and/or `timezone`; omitted fields stay. With a test key, writes a sandbox overlay that only test keys read.',
        body: PatchMeBody,
        response: { 200: One, ...errorResponses(...AUTHED_ERRORS, 413, 415) },
      },
    },
    async (req) => ({ data: await users.patchMe(req.unit(), req.body) }),
  );

  app.get(
    '/users',
    {
      config: { scope: 'users:read' },
      schema: {
        tags,
        summary: 'List workspace members',
        operationId: 'listUsers',
        description: 'Oldest first (`order=desc`: newest first); page with `offset` or `cursor`.',
        querystring: ListUsersQuery,
        response: { 200: ListOf(Type.Ref(UserSchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => {
      const page = await users.list(req.principal, toPageRequest(req.query, 'user'));
      return { data: page.items, meta: pageMeta(page) };
    },
  );
};
