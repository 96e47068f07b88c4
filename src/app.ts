import Fastify, { type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import secureJson from 'secure-json-parse';
import type { Config } from './config.js';
import type { Storage } from './db/database.js';
import { installAuth } from './http/auth.js';
import { errorBody, frameworkErrors, installErrorHandler } from './http/errors.js';
import { installIdempotency } from './http/idempotency.js';
import { lazyChildLogger } from './http/logging.js';
import { collectRoutes, installMethodNotAllowed } from './http/method-not-allowed.js';
import { installOpenApi } from './http/openapi.js';
import { installRateLimit } from './http/rate-limit.js';
import { installRequestId, requestIds } from './http/request-id.js';
import { ErrorSchema } from './http/schemas.js';
import { installNoUndeclaredInput, installValidators, unstorableStrings } from './http/validation.js';
import { type Clock, systemClock } from './lib/clock.js';
import { AppError, ValidationError } from './lib/errors.js';
import { eventsRoutes } from './modules/events/events.routes.js';
import { EventSchema } from './modules/events/events.schemas.js';
import { resourcesRoutes } from './modules/resources/resources.routes.js';
import { ResourceSchema } from './modules/resources/resources.schemas.js';
import { usersRoutes } from './modules/users/users.routes.js';
import { UserSchema } from './modules/users/users.schemas.js';
import { webhooksRoutes } from './modules/webhooks/webhooks.routes.js';
import { DeliverySchema, WebhookSchema } from './modules/webhooks/webhooks.schemas.js';
import { redisState } from './redis.js';
import { createServices, type Services } from './services.js';

export interface AppDeps {
  config: Config;
  storage: Storage;
  clock?: Clock;
  redis?: Redis;
  /** Redis key prefix for rate-limit counters (default `wsvc:rl:`). */
  rateLimitNamespace?: string;
  /** Services built elsewhere (tests share them with the worker); built here when absent. */
  services?: Services;
}

/** Builds the HTTP app from plugins and modules; never listens (see server.ts). */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, storage } = deps;
  const clock = deps.clock ?? systemClock;
  const services = deps.services ?? createServices({ storage, clock, config });

  const app = Fastify({
    logger: config.LOG_LEVEL === 'silent' ? false : { level: config.LOG_LEVEL },
    // A request's child logger is built when it first logs (src/http/logging.ts, docs/performance.md).
    childLoggerFactory: lazyChildLogger,
    genReqId: requestIds(),
    requestIdHeader: false,
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors,
  });

  installValidators(app);
  installErrorHandler(app, storage.dialect);
  installRequestId(app);
  // JSON only (docs/api.md#errors: anything else is 415). An empty body is "no body", not a parse error.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    if (body === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = secureJson.parse(body as string, { protoAction: 'error', constructorAction: 'error' });
    } catch {
      return done(new AppError(400, 'invalid_json', 'The request body is not valid JSON.'), undefined);
    }
    const unstorable = unstorableStrings(parsed);
    if (unstorable.length > 0)
      return done(new ValidationError('The body has strings that cannot be stored.', unstorable));
    done(null, parsed);
  });
  for (const schema of [ErrorSchema, ResourceSchema, UserSchema, EventSchema, WebhookSchema, DeliverySchema]) {
    app.addSchema(schema);
  }

  await installOpenApi(app);
  installAuth(app, services.keys);
  installNoUndeclaredInput(app);
  await installRateLimit(app, {
    live: config.RATE_LIMIT_LIVE,
    test: config.RATE_LIMIT_TEST,
    windowS: config.RATE_LIMIT_WINDOW_S,
    redis: deps.redis,
    nameSpace: deps.rateLimitNamespace,
  });
  installIdempotency(app, services.idempotency);

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (req, reply) => {
    // Redis down does not make the process unready: the API fails open (docs/operations.md).
    const redis = deps.redis ? { redis: redisState(deps.redis) } : {};
    try {
      await storage.ping();
      return { status: 'ready', database: 'ok', ...redis };
    } catch {
      const body = errorBody(req, 'service_unavailable', 'The database is not reachable.');
      return reply.code(503).send({ ...body, database: 'unavailable', ...redis });
    }
  });

  const routeTable = collectRoutes(app);
  await app.register(
    async (v1) => {
      await v1.register(usersRoutes, { users: services.users });
      await v1.register(resourcesRoutes, { resources: services.resources });
      await v1.register(webhooksRoutes, { webhooks: services.webhooks });
      await v1.register(eventsRoutes, { events: services.events });
    },
    { prefix: '/v1' },
  );
  installMethodNotAllowed(app, routeTable);
  return app;
}
