import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/** D21: OpenAPI 3.1 generated from the route schemas, served at /v1/openapi.json, rendered at /docs. */
export async function installOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Workspace Service API',
        version: '1.0.0',
        description:
          'Versioned REST API of the Workspace Service. Errors use the D1 body; lists the D4 envelope. ' +
          'Authenticate with `Authorization: Bearer svc_live_…` or `svc_test_…`.',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'svc_live_… or svc_test_… (D12)' },
        },
      },
      security: [{ apiKey: [] }],
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
