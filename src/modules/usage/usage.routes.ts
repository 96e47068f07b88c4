import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, DataOf, errorResponses, RetainedListOf } from '../../kernel/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import { LoggedRequestSchema, RequestLogQuerySchema, UsageQuerySchema, UsageSeriesSchema } from './usage.schemas.js';
import type { UsageService } from './usage.service.js';

const tags = ['Usage'];

/** HTTP for /v1/usage and /v1/requests (docs/usage.md). */
export const usageRoutes: FastifyPluginAsyncTypebox<{
  usage: UsageService;
  /** REQUEST_LOG_RETENTION_DAYS, told in `meta.retention_days`. */
  retentionDays: number;
}> = async (app, { usage, retentionDays }) => {
  app.get(
    '/usage',
    {
      config: { scope: 'usage:read' },
      schema: {
        tags,
        summary: 'Usage time series',
        operationId: 'getUsage',
        description:
          'Requests answered to API keys of the workspace, per period, optionally one series per key, route or status, with latency percentiles. Counted in memory and written every few seconds, so the current minute may lag by up to USAGE_FLUSH_MS. More than 10,000 periods, `to` not after `from`, an unknown `granularity` or `group_by`: 400.',
        querystring: UsageQuerySchema,
        response: { 200: DataOf(Type.Ref(UsageSeriesSchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => ({ data: await usage.series(req.principal, req.query) }),
  );

  app.get(
    '/requests',
    {
      config: { scope: 'requests:read' },
      schema: {
        tags,
        summary: 'List failed requests',
        operationId: 'listRequests',
        description:
          'Every 4xx and 5xx answer to an API key of this environment, newest first, kept 7 days; members see their own keys only. Filter by `status` (`4xx`, `5xx`, `429`…), `code`, `key_id`, `route`, `request_id`, `from`, `to`.',
        querystring: RequestLogQuerySchema,
        response: { 200: RetainedListOf(Type.Ref(LoggedRequestSchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => {
      const { limit, offset, cursor, ...filter } = req.query;
      const page = await usage.requests(req.principal, filter, toPageRequest({ limit, offset, cursor }));
      return { data: page.items, meta: { ...pageMeta(page), retention_days: retentionDays } };
    },
  );
};
