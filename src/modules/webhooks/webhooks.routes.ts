import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, DataOf, errorResponses, IdParam, IdString, ListOf } from '../../http/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import {
  CreatedWebhookSchema,
  CreateWebhookBody,
  DeliveryDetailSchema,
  DeliverySchema,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  WebhookSchema,
} from './webhooks.schemas.js';
import type { WebhooksService } from './webhooks.service.js';

const tags = ['Webhooks'];
const Params = IdParam('wh_', 'wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R');
const DeliveryParams = Type.Object({
  id: IdString('wh_', 'wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R'),
  delivery_id: IdString('dlv_', 'dlv_01JD3K8Z6W6J9Q4X1V5N2M7P8R'),
});

/** HTTP for /v1/webhooks: endpoints (docs/api.md#webhooks) and their delivery logs (docs/api.md#webhook-deliveries). */
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
          '(`WEBHOOK_ALLOW_INSECURE_URLS` lifts this for local development). At most 16 per workspace and environment. Accepts `Idempotency-Key`.',
        body: CreateWebhookBody,
        response: { 201: DataOf(CreatedWebhookSchema), ...errorResponses(...AUTHED_ERRORS, 409, 413, 415) },
      },
    },
    async (req, reply) =>
      reply.code(201).send({ data: await webhooks.create(req.principal, req.body, req.idempotentWrite(reply, 201)) }),
  );

  app.get(
    '/webhooks',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags,
        summary: 'List webhook endpoints',
        operationId: 'listWebhooks',
        description: 'Oldest first, paging; never includes `secret`.',
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
      await webhooks.remove(req.principal, req.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags,
        summary: "List a webhook's deliveries",
        operationId: 'listWebhookDeliveries',
        description: 'The delivery log: oldest first, paging, filter by `status`.',
        params: Params,
        querystring: ListDeliveriesQuery,
        response: { 200: ListOf(Type.Ref(DeliverySchema)), ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req) => {
      const { status, ...paging } = req.query;
      const page = await webhooks.listDeliveries(
        req.principal,
        req.params.id,
        status,
        toPageRequest(paging, 'delivery'),
      );
      return { data: page.items, meta: pageMeta(page) };
    },
  );

  app.get(
    '/webhooks/:id/deliveries/:delivery_id',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags,
        summary: 'Get a delivery with every attempt',
        operationId: 'getWebhookDelivery',
        description:
          'One delivery of this endpoint with each attempt: time, duration, response status and the first 1 KiB of the response body, or the error.',
        params: DeliveryParams,
        response: { 200: DataOf(DeliveryDetailSchema), ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req) => ({ data: await webhooks.getDelivery(req.principal, req.params.id, req.params.delivery_id) }),
  );

  app.post(
    '/webhooks/:id/deliveries/:delivery_id/retry',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags,
        summary: 'Resend a delivery now',
        operationId: 'retryWebhookDelivery',
        description:
          'Queues one more attempt at once, whatever the state; 409 `delivery_in_progress` while an attempt runs.',
        params: DeliveryParams,
        response: { 200: DataOf(DeliveryDetailSchema), ...errorResponses(...AUTHED_ERRORS, 404, 409) },
      },
    },
    async (req, reply) => ({
      data: await webhooks.retryDelivery(
        req.principal,
        req.params.id,
        req.params.delivery_id,
        req.idempotentWrite(reply, 200),
      ),
    }),
  );
};
