import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, BODY_OPTIONAL, DataOf, errorResponses, IdParam, ListOf } from '../../kernel/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import {
  ApiKeySchema,
  CreatedApiKeySchema,
  CreateKeyBody,
  ListKeysQuery,
  RolledApiKeySchema,
  RollKeyBody,
} from './keys.schemas.js';
import type { KeysService } from './keys.service.js';

const tags = ['Keys'];

/**
 * What an idempotent key creation stores for a replay: the answer without the plaintext key, of which only the
 * digest is ever stored (docs/api.md#keys-scopes-and-roles), so a replay (docs/api.md#idempotency) answers `key: null`.
 */
const withoutPlaintext = <T extends { key: string | null }>(result: T): T => ({ ...result, key: null });
const Params = IdParam('key_', 'key_01JD3K8Z6W6J9Q4X1V5N2M7P8R');
const WHOSE =
  'An admin sees every key of the workspace, anyone else their own; a test key sees test keys only. ' +
  'Another user’s key is a 404 to a non-admin.';

/** HTTP for /v1/keys: API keys managed by their users (docs/api.md#keys-scopes-and-roles). */
export const keysRoutes: FastifyPluginAsyncTypebox<{ keys: KeysService }> = async (app, { keys }) => {
  app.get(
    '/keys',
    {
      config: { scope: 'keys:read' },
      schema: {
        tags,
        operationId: 'listKeys',
        summary: 'List API keys',
        description: `Oldest first (\`order=desc\`: newest first), paged like the other lists, filter by \`env\`. ${WHOSE} Never includes a key itself.`,
        querystring: ListKeysQuery,
        response: { 200: ListOf(Type.Ref(ApiKeySchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => {
      const { env, ...paging } = req.query;
      const page = await keys.list(req.principal, { env }, toPageRequest(paging, 'key'));
      return { data: page.items, meta: pageMeta(page) };
    },
  );

  app.post(
    '/keys',
    {
      config: { scope: 'keys:write' },
      schema: {
        tags,
        operationId: 'createKey',
        summary: 'Create an API key',
        description:
          'A key owned by the caller. The answer carries `key`, shown only here. `scopes` must be among the ' +
          'calling key’s own (403 otherwise); left out, the new key gets the same scopes as the calling key. ' +
          'A test key can create test keys only. Accepts `Idempotency-Key`.',
        body: CreateKeyBody,
        response: { 201: DataOf(CreatedApiKeySchema), ...errorResponses(...AUTHED_ERRORS, 409, 413, 415) },
      },
    },
    async (req, reply) =>
      reply.code(201).send({ data: await keys.create(req.unit(reply, 201, withoutPlaintext), req.body) }),
  );

  app.get(
    '/keys/:id',
    {
      config: { scope: 'keys:read' },
      schema: {
        tags,
        operationId: 'getKey',
        summary: 'Get an API key',
        description: WHOSE,
        params: Params,
        response: { 200: DataOf(Type.Ref(ApiKeySchema)), ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req) => ({ data: await keys.get(req.principal, req.params.id) }),
  );

  app.delete(
    '/keys/:id',
    {
      config: { scope: 'keys:write' },
      schema: {
        tags,
        operationId: 'revokeKey',
        summary: 'Revoke an API key',
        description:
          'Revokes the key at once: every later request with it, and every write with it that has not committed ' +
          'yet, answers 401 `expired_token`. The record stays listed with `status: "revoked"`; revoking it again ' +
          `answers 204 and changes nothing. ${WHOSE}`,
        params: Params,
        response: { 204: Type.Null({ description: 'Revoked' }), ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req, reply) => {
      await keys.revoke(req.unit(), req.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/keys/:id/roll',
    {
      config: { scope: 'keys:write' },
      // No body at all means the defaults, like `{}`.
      preValidation: async (req) => {
        if (req.body === undefined) (req as { body: unknown }).body = {};
      },
      schema: {
        [BODY_OPTIONAL]: true,
        tags,
        operationId: 'rollKey',
        summary: 'Roll an API key',
        description:
          'Issues a successor with the same name, environment, scopes and owner (its `key` shown only here) and ' +
          'schedules the old key to stop after `expire_old_in_s` seconds (default 86400, at most 604800, 0: at once), ' +
          'so clients can switch without downtime. A key past its `expires_at` answers 401 `expired_token`. ' +
          `409 \`key_revoked\` or \`key_expired\` for a key that no longer works. ${WHOSE}`,
        params: Params,
        body: RollKeyBody,
        response: { 201: DataOf(RolledApiKeySchema), ...errorResponses(...AUTHED_ERRORS, 404, 409, 413, 415) },
      },
    },
    async (req, reply) =>
      reply.code(201).send({
        data: await keys.roll(
          req.unit(reply, 201, withoutPlaintext),
          req.params.id,
          req.body.expire_old_in_s ?? 86_400,
        ),
      }),
  );
};
