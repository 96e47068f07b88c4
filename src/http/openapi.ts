import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { completeOpenApi } from './openapi-complete.js';

const SIGNATURE_HEADERS: Record<string, string> = {
  'X-Service-Signature':
    'Hex HMAC-SHA256 of the exact body bytes, keyed with the webhook secret (UTF-8); after a rotation, with the old ' +
    'secret until it expires, then the new one.',
  'webhook-id': 'The event id; the same on every retry (deduplicate by it).',
  'webhook-timestamp': 'Unix seconds of this attempt.',
  'webhook-signature':
    '`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the base64 part of the secret (Standard Webhooks).',
};
const signatureHeaders = Object.entries(SIGNATURE_HEADERS).map(([name, description]) => ({
  name,
  in: 'header' as const,
  required: true,
  description,
  schema: { type: 'string' as const, maxLength: 1024 },
}));

/** The delivery request, as an OpenAPI 3.1 webhook: the body is the `Event` schema. */
const deliveryWebhook = {
  post: {
    summary: 'Event delivery',
    description:
      'POSTed to each enabled webhook of the workspace and environment whose `events` include the type or `*`. ' +
      'A 2xx within 15 s is success; anything else (timeout, connection error, 3xx, 4xx, 5xx) is retried up to 5 times ' +
      '(about 30 s, 2 min, 8 min, 32 min, 2 h, with ±10 % jitter). At least once: deduplicate by `id`.',
    parameters: signatureHeaders,
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Event' } } },
    },
    responses: { '2XX': { description: 'Received. Any other answer is a failed attempt.' } },
  },
};

/** The operator's event, as an OpenAPI 3.1 webhook: the body is the `OperatorEvent` schema. */
const operatorWebhook = {
  post: {
    summary: 'Operator event delivery',
    description:
      'Instance-wide events (`workspace.created`, `workspace.deleted`, `invoice.payment_failed`, `subscription.unpaid`) ' +
      'POSTed to OPERATOR_WEBHOOK_URL, signed with OPERATOR_WEBHOOK_SECRET (the Standard Webhooks headers), ' +
      "retried like an endpoint's events. At least once: deduplicate by `id`.",
    parameters: signatureHeaders,
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/OperatorEvent' } } },
    },
    responses: { '2XX': { description: 'Received. Any other answer is a failed attempt.' } },
  },
};

/** OpenAPI 3.1 generated from the route schemas, served at /v1/openapi.json, rendered at /docs (docs/api.md#the-openapi-document). */
export async function installOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Workspace Service API',
        version: '1.0.0',
        description:
          'Versioned REST API of the Workspace Service. Every error answers the `Error` body; every list ' +
          'answers `{data, meta}`. Authenticate with `Authorization: Bearer svc_live_…` or `svc_test_…`. ' +
          'The rules behind each answer are in the repository’s docs/api.md.',
        contact: { name: 'The operators of this server' },
      },
      servers: [
        {
          url: '/',
          description: 'This server, in whichever environment it runs (local development, staging or production).',
        },
      ],
      components: {
        securitySchemes: {
          apiKey: {
            type: 'http',
            scheme: 'bearer',
            description: '`svc_live_…` or `svc_test_…` + 43 base62 characters, shown once when the key is created.',
          },
        },
      },
      security: [{ apiKey: [] }],
      // OpenAPI 3.1: what the service sends to a registered endpoint (docs/api.md#webhook-deliveries).
      webhooks: { event: deliveryWebhook, operator_event: operatorWebhook },
    },
    transformObject: (documentObject) =>
      completeOpenApi((documentObject as unknown as { openapiObject: Record<string, unknown> }).openapiObject),
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
