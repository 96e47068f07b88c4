import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, BODY_OPTIONAL, DataOf, errorResponses, IdParam, ListOf } from '../../kernel/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import {
  CreatedWebhookSchema,
  CreateWebhookBody,
  DeliverySchema,
  ListWebhooksQuery,
  RotateSecretBody,
  TestWebhookBody,
  UpdateWebhookBody,
  WebhookSchema,
} from './webhooks.schemas.js';
import type { WebhooksService } from './webhooks.service.js';

const tags = ['Webhooks'];
const Params = IdParam('wh_', 'wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R');

/** HTTP for /v1/webhooks: endpoints and their management (docs/api.md#webhooks). */
export const webhooksRoutes: FastifyPluginAsyncTypebox<{ webhooks: WebhooksService }> = async (app, { webhooks }) => {
  app.post(
    '/webhooks',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags,
        summary: 'Register a webhook endpoint',
        operationId: 'createWebhook',
        description:
          'The answer carries `secret`, shown only here. `url` must be https:// and resolve to public addresses ' +
          '(for local development `WEBHOOK_ALLOW_INSECURE_URLS` allows http:// and loopback or private addresses, never ' +
          'link-local or cloud metadata ones). At most 16 per workspace and environment. Accepts `Idempotency-Key`.',
        body: CreateWebhookBody,
        response: { 201: DataOf(CreatedWebhookSchema), ...errorResponses(...AUTHED_ERRORS, 409, 413, 415) },
      },
    },
    async (req, reply) => reply.code(201).send({ data: await webhooks.create(req.unit(reply, 201), req.body) }),
  );

  app.get(
    '/webhooks',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags,
        summary: 'List webhook endpoints',
        operationId: 'listWebhooks',
        description: 'Oldest first (`order=desc`: newest first), paging; never includes `secret`.',
        querystring: ListWebhooksQuery,
        response: { 200: ListOf(Type.Ref(WebhookSchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => {
      const page = await webhooks.list(req.principal, toPageRequest(req.query, 'webhook'));
      return { data: page.items, meta: pageMeta(page) };
    },
  );

  app.get(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags,
        summary: 'Get a webhook endpoint',
        operationId: 'getWebhook',
        description: 'One endpoint, without its secret (the secret is shown only when the endpoint is created).',
        params: Params,
        response: { 200: DataOf(Type.Ref(WebhookSchema)), ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req) => ({ data: await webhooks.get(req.principal, req.params.id) }),
  );

  app.patch(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags,
        operationId: 'updateWebhook',
        summary: 'Change a webhook endpoint',
        description:
          'Changes `url`, `events` and `label` with the same rules as at creation; fields left out stay. ' +
          'The secret and the delivery log are kept. `{}` changes nothing.',
        params: Params,
        body: UpdateWebhookBody,
        response: { 200: DataOf(Type.Ref(WebhookSchema)), ...errorResponses(...AUTHED_ERRORS, 404, 413, 415) },
      },
    },
    async (req) => ({ data: await webhooks.update(req.unit(), req.params.id, req.body) }),
  );

  for (const [action, status, operationId, summary, description] of [
    [
      'disable',
      'disabled',
      'disableWebhook',
      'Disable a webhook endpoint',
      'No new deliveries are queued for it, and its pending deliveries and retries are cancelled ' +
        '(status `cancelled`). Disabling a disabled endpoint changes nothing.',
    ],
    [
      'enable',
      'enabled',
      'enableWebhook',
      'Enable a webhook endpoint',
      'Deliveries resume with the next event; cancelled ones stay cancelled ' +
        '(`POST /webhooks/{id}/deliveries/retry` with `status: "cancelled"` sends them). Enabling an enabled endpoint changes nothing.',
    ],
  ] as const) {
    app.post(
      `/webhooks/:id/${action}`,
      {
        config: { scope: 'webhooks:write' },
        schema: {
          tags,
          operationId,
          summary,
          description,
          params: Params,
          response: { 200: DataOf(Type.Ref(WebhookSchema)), ...errorResponses(...AUTHED_ERRORS, 404, 409) },
        },
      },
      async (req, reply) => ({
        data: await webhooks.setStatus(req.unit(reply, 200), req.params.id, status),
      }),
    );
  }

  app.post(
    '/webhooks/:id/rotate-secret',
    {
      config: { scope: 'webhooks:write' },
      // No body at all means the defaults, like `{}`.
      preValidation: async (req) => {
        if (req.body === undefined) (req as { body: unknown }).body = {};
      },
      schema: {
        [BODY_OPTIONAL]: true,
        tags,
        operationId: 'rotateWebhookSecret',
        summary: "Rotate a webhook endpoint's secret",
        description:
          'Answers the new `secret`, shown only here. For `expire_old_in_s` seconds (default 86400, at most 604800, ' +
          '0 to stop at once) every delivery carries two Standard Webhooks signatures, `webhook-signature: v1,<new> v1,<old>`, ' +
          'so receivers can switch without missing a delivery; `X-Service-Signature` (one value) stays keyed with the old ' +
          'secret until it expires (`previous_secret_expires_at`), then with the new one. ' +
          'The body may be left out.',
        params: Params,
        body: RotateSecretBody,
        response: { 200: DataOf(CreatedWebhookSchema), ...errorResponses(...AUTHED_ERRORS, 404, 409, 413, 415) },
      },
    },
    async (req, reply) => ({
      data: await webhooks.rotateSecret(req.unit(reply, 200), req.params.id, req.body.expire_old_in_s ?? 86_400),
    }),
  );

  app.post(
    '/webhooks/:id/test',
    {
      config: { scope: 'webhooks:write' },
      // No body at all means the defaults, like `{}`: a `webhook.test` event, as before the body existed.
      preValidation: async (req) => {
        if (req.body === undefined) (req as { body: unknown }).body = {};
      },
      schema: {
        [BODY_OPTIONAL]: true,
        tags,
        operationId: 'testWebhook',
        summary: 'Send a test event to a webhook endpoint',
        description:
          'Records a test event and queues its delivery to this endpoint only (no other endpoint gets it, whatever it ' +
          'subscribes to). Without a body, or without `event_type`, the event is `webhook.test` (`data: {webhook_id, message}`). ' +
          'With `event_type` of the catalogue (`resource.created`, …) the event has that type, `test: true` and example `data` ' +
          'of the real shape about an example resource (a `res_` id that names no resource), and is sent even if the endpoint ' +
          'does not subscribe to that type. Test events are stored like the others (`GET /events`), are signed like every ' +
          'delivery and are never sent to integrations. Answers 202 with the queued delivery; follow it in the delivery log. ' +
          'An unknown `event_type` is a 400 naming the valid values. 409 `webhook_disabled` for a disabled endpoint.',
        params: Params,
        body: TestWebhookBody,
        response: {
          202: DataOf(Type.Ref(DeliverySchema)),
          ...errorResponses(...AUTHED_ERRORS, 404, 409, 413, 415),
        },
      },
    },
    async (req, reply) =>
      reply.code(202).send({
        data: await webhooks.sendTest(req.unit(reply, 202), req.params.id, req.body.event_type),
      }),
  );

  app.delete(
    '/webhooks/:id',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags,
        summary: 'Delete a webhook endpoint',
        operationId: 'deleteWebhook',
        description: 'Cancels every pending delivery (and drops its log) before answering 204.',
        params: Params,
        response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req, reply) => {
      await webhooks.remove(req.unit(), req.params.id);
      return reply.code(204).send(null);
    },
  );
};
