import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { systemActor } from '../../kernel/principal.js';
import { errorResponses } from '../../kernel/schemas.js';
import type { BillingService } from './billing.service.js';

/** POST /stripe/webhook (docs/billing.md#payments-with-stripe): Stripe's events, no key, the signature checked. */
export const stripeWebhookRoutes: FastifyPluginAsyncTypebox<{ billing: BillingService }> = async (app, { billing }) => {
  app.post(
    '/stripe/webhook',
    {
      schema: {
        // Called by Stripe only: outside the /v1 document, like /healthz (docs/billing.md#payments-with-stripe).
        hide: true,
        tags: ['Billing'],
        summary: "Stripe's webhook events",
        operationId: 'receiveStripeEvent',
        description:
          'Called by Stripe, not by clients: the body is an event signed with STRIPE_WEBHOOK_SECRET (`Stripe-Signature`, HMAC-SHA256 over `<t>.<body>`, at most 5 minutes old). Each event id is processed once; types the service does not use are answered 200. 404 while payments with Stripe are off.',
        body: Type.Object({ id: Type.String(), type: Type.String() }, { additionalProperties: true }),
        response: {
          200: Type.Object({ received: Type.Literal(true) }),
          ...errorResponses(400, 404),
        },
      },
    },
    async (req) => {
      const signature = req.headers['stripe-signature'];
      await billing.receiveEvent(
        req.unitAs(systemActor('stripe')),
        req.rawBody ?? '',
        typeof signature === 'string' ? signature : undefined,
      );
      return { received: true as const };
    },
  );
};
