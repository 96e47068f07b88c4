import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, DataOf, errorResponses, IdParam, IdString, RetainedListOf } from '../../kernel/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import type { DeliveriesService } from './deliveries.service.js';
import {
  BulkRetryBody,
  BulkRetryResultSchema,
  DeliveryDetailSchema,
  DeliverySchema,
  DeliverySummaryQuery,
  DeliverySummarySchema,
  ListAllDeliveriesQuery,
  ListDeliveriesQuery,
} from './webhooks.schemas.js';

const tags = ['Deliveries'];
const Params = IdParam('wh_', 'wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R');
const DeliveryParams = Type.Object({
  id: IdString('wh_', 'wh_01JD3K8Z6W6J9Q4X1V5N2M7P8R'),
  delivery_id: IdString('dlv_', 'dlv_01JD3K8Z6W6J9Q4X1V5N2M7P8R'),
});

const iso = (t: string | undefined) => (t === undefined ? undefined : new Date(t).toISOString());

/** HTTP for the delivery logs: per endpoint, across the environment, and resends (docs/api.md#webhook-deliveries). */
export const deliveriesRoutes: FastifyPluginAsyncTypebox<{
  deliveries: DeliveriesService;
  /** EVENT_RETENTION_DAYS, told in `meta.retention_days`. */
  retentionDays: number;
}> = async (app, { deliveries, retentionDays }) => {
  app.get(
    '/deliveries',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags,
        operationId: 'listDeliveries',
        summary: 'List deliveries across endpoints',
        description:
          "Every delivery of the key's environment, oldest first (`order=desc`: newest first), paged like the other lists. Filters: `webhook_id`, " +
          '`status`, `event`, `created_after` and `created_before` (both exclusive).',
        querystring: ListAllDeliveriesQuery,
        response: { 200: RetainedListOf(Type.Ref(DeliverySchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => {
      const { webhook_id, status, event, created_after, created_before, ...paging } = req.query;
      const filter = {
        webhook_id,
        status,
        event,
        created_after: iso(created_after),
        created_before: iso(created_before),
      };
      const page = await deliveries.list(req.principal, filter, toPageRequest(paging, 'delivery'));
      return { data: page.items, meta: { ...pageMeta(page), retention_days: retentionDays } };
    },
  );

  app.get(
    '/deliveries/summary',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags,
        operationId: 'getDeliverySummary',
        summary: 'Delivery health over time',
        description:
          "The key's environment's deliveries created in the last `window`, counted per period and state (24h: 24 " +
          'periods of 1 hour; 7d: 28 of 6 hours; 30d: 30 of 24 hours; the last period ends with the current hour), ' +
          'the success rate over the window, and the 10 newest failed deliveries.',
        querystring: DeliverySummaryQuery,
        response: { 200: DataOf(DeliverySummarySchema), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => ({ data: await deliveries.summary(req.principal, req.query.window ?? '24h') }),
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      config: { scope: 'webhooks:read' },
      schema: {
        tags,
        summary: "List a webhook's deliveries",
        operationId: 'listWebhookDeliveries',
        description: 'The delivery log: oldest first (`order=desc`: newest first), paging, filter by `status`.',
        params: Params,
        querystring: ListDeliveriesQuery,
        response: { 200: RetainedListOf(Type.Ref(DeliverySchema)), ...errorResponses(...AUTHED_ERRORS, 404) },
      },
    },
    async (req) => {
      const { status, ...paging } = req.query;
      const page = await deliveries.listForWebhook(
        req.principal,
        req.params.id,
        status,
        toPageRequest(paging, 'delivery'),
      );
      return { data: page.items, meta: { ...pageMeta(page), retention_days: retentionDays } };
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
    async (req) => ({ data: await deliveries.get(req.principal, req.params.id, req.params.delivery_id) }),
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
          'Queues one more attempt at once, whatever the state; 409 `delivery_in_progress` while an attempt runs, ' +
          '409 `webhook_disabled` when the endpoint is disabled.',
        params: DeliveryParams,
        response: { 200: DataOf(DeliveryDetailSchema), ...errorResponses(...AUTHED_ERRORS, 404, 409) },
      },
    },
    async (req, reply) => ({
      data: await deliveries.retry(req.unit(reply, 200), req.params.id, req.params.delivery_id),
    }),
  );

  app.post(
    '/webhooks/:id/deliveries/retry',
    {
      config: { scope: 'webhooks:write' },
      schema: {
        tags,
        operationId: 'retryDeliveries',
        summary: 'Resend every failed delivery since a time',
        description:
          'Queues one more attempt for every delivery of this endpoint in `status` (`failed` by default, or `cancelled`) ' +
          'created at or after `since`, as one job: one statement in one transaction, whatever the count. ' +
          'Answers how many were queued. 409 `webhook_disabled` when the endpoint is disabled.',
        params: Params,
        body: BulkRetryBody,
        response: { 200: DataOf(BulkRetryResultSchema), ...errorResponses(...AUTHED_ERRORS, 404, 409, 413, 415) },
      },
    },
    async (req, reply) => ({
      data: await deliveries.retryMatching(req.unit(reply, 200), req.params.id, req.body),
    }),
  );
};
