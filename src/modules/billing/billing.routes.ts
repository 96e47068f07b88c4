import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, DataOf, errorResponses, ListOf } from '../../http/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import { InvoiceSchema, ListInvoicesQuery, SubscriptionSchema } from './billing.schemas.js';
import type { BillingService } from './billing.service.js';

const tags = ['Billing'];

/** HTTP for /v1/billing (docs/billing.md): admins only (scope billing:read). */
export const billingRoutes: FastifyPluginAsyncTypebox<{ billing: BillingService }> = async (app, { billing }) => {
  app.get(
    '/billing/subscription',
    {
      config: { scope: 'billing:read' },
      schema: {
        tags,
        summary: "The workspace's plan, period, usage and upcoming invoice",
        operationId: 'getSubscription',
        description:
          'The plan in force, the current monthly period (starting 00:00 UTC on the anchor day), billable live requests so far (flushed every few seconds) against the included ones, a downgrade waiting for the period end, and the upcoming invoice computed now. The same for live and test keys: billing belongs to the workspace.',
        response: { 200: DataOf(Type.Ref(SubscriptionSchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => ({ data: await billing.subscription(req.principal) }),
  );

  app.get(
    '/billing/invoices',
    {
      config: { scope: 'billing:read' },
      schema: {
        tags,
        summary: 'List invoices',
        operationId: 'listInvoices',
        description:
          'Finalized invoices of the workspace, newest first, each with its lines. An invoice is finalized an hour after its period ends and never changes afterwards, except its status (open → paid or void).',
        querystring: ListInvoicesQuery,
        response: { 200: ListOf(Type.Ref(InvoiceSchema)), ...errorResponses(...AUTHED_ERRORS) },
      },
    },
    async (req) => {
      const page = await billing.invoices(req.principal, toPageRequest(req.query, 'invoice'));
      return { data: page.items, meta: pageMeta(page) };
    },
  );
};
