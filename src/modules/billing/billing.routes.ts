import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { AUTHED_ERRORS, DataOf, errorResponses, ListOf } from '../../kernel/schemas.js';
import { pageMeta, toPageRequest } from '../../lib/paging.js';
import {
  CardReturnQuery,
  CardSchema,
  ChangePlanBody,
  InvoiceSchema,
  ListInvoicesQuery,
  PlanChangeSchema,
  PlanSchema,
  SubscriptionSchema,
} from './billing.schemas.js';
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

/**
 * The console's own billing routes under /console/api (docs/console.md#billing), session only: the
 * plans in force (any member), and "Change plan" (admins; CSRF like every console write). The
 * subscription and invoices are read through the /v1 mirror (/console/api/v1/billing/…).
 */
export const billingConsoleRoutes: FastifyPluginAsyncTypebox<{ billing: BillingService }> = async (
  app,
  { billing },
) => {
  app.get(
    '/billing/plans',
    {
      config: { console: 'actor' },
      schema: { hide: true, response: { 200: DataOf(Type.Array(Type.Ref(PlanSchema))) } },
    },
    async () => ({ data: [...billing.plans()] }),
  );

  app.post(
    '/billing/plan',
    {
      config: { console: 'actor' },
      schema: { hide: true, body: ChangePlanBody, response: { 200: DataOf(PlanChangeSchema) } },
    },
    async (req) => ({ data: await billing.changePlan(req.unit(), req.body.plan) }),
  );

  // Payments with Stripe (docs/billing.md#payments-with-stripe): the card, and Checkout in setup mode to add one.
  app.get(
    '/billing/card',
    {
      config: { console: 'actor' },
      schema: {
        hide: true,
        response: {
          200: DataOf(Type.Object({ enabled: Type.Boolean(), card: Type.Union([CardSchema, Type.Null()]) })),
        },
      },
    },
    async (req) => ({ data: { enabled: billing.paymentsOn, card: await billing.card(req.principal) } }),
  );

  app.post(
    '/billing/card/checkout',
    {
      config: { console: 'actor' },
      schema: { hide: true, response: { 200: DataOf(Type.Object({ url: Type.String() })) } },
    },
    async (req) => ({ data: await billing.startCardSetup(req.unit()) }),
  );

  app.get(
    '/billing/card/return',
    {
      config: { console: 'actor', workspaceQuery: 'ws' },
      schema: { hide: true, querystring: CardReturnQuery },
    },
    async (req, reply) => reply.redirect(await billing.finishCardSetup(req.unit(), req.query.session_id), 303),
  );
};
