import Fastify, { type FastifyInstance, type RouteOptions } from 'fastify';
import type { Redis } from 'ioredis';
import type { DestinationStream } from 'pino';
import { type Config, publicUrl, stripeOn, trustProxy } from './config.js';
import { createDatabaseBreaker } from './db/breaker.js';
import type { Storage } from './db/database.js';
import { createRedisGuard, type RedisLog } from './db/redis.js';
import { installAuth } from './http/auth.js';
import { installJsonBody } from './http/body.js';
import { installConsoleStatic } from './http/console-static.js';
import { frameworkErrors, installDatabaseBreaker, installErrorHandler } from './http/errors.js';
import { installHealth } from './http/health.js';
import { installIdempotency } from './http/idempotency.js';
import { lazyChildLogger, loggerOptions } from './http/logging.js';
import { collectRoutes } from './http/method-not-allowed.js';
import { installMetrics } from './http/metrics.js';
import { installOpenApi } from './http/openapi.js';
import { installRequestOrigin } from './http/origin.js';
import { createPlanCap } from './http/plan-cap.js';
import { clientErrorHandler, installEarlyAnswers, refuseConnect } from './http/protocol.js';
import { installRateLimit } from './http/rate-limit.js';
import { installRequestId, requestIds } from './http/request-id.js';
import { sharedSerializers } from './http/serializers.js';
import { installUsageMetering } from './http/usage-metering.js';
import { installNoUndeclaredInput, installValidators } from './http/validation.js';
import { type Clock, systemClock } from './kernel/clock.js';
import { personActor } from './kernel/principal.js';
import { ErrorSchema } from './kernel/schemas.js';
import { auditRoutes } from './modules/audit/audit.routes.js';
import { AuditEntrySchema } from './modules/audit/audit.schemas.js';
import { billingConsoleRoutes, billingRoutes } from './modules/billing/billing.routes.js';
import {
  InvoiceLineSchema,
  InvoiceSchema,
  PaymentAttemptSchema,
  PlanSchema,
  SubscriptionSchema,
  UpcomingInvoiceSchema,
} from './modules/billing/billing.schemas.js';
import { stripeWebhookRoutes } from './modules/billing/payments.routes.js';
import { consoleRoutes } from './modules/console-auth/console.routes.js';
import { installConsoleSession } from './modules/console-auth/console-session.js';
import { eventsRoutes } from './modules/events/events.routes.js';
import { EventSchema } from './modules/events/events.schemas.js';
import { exportsRoutes } from './modules/exports/exports.routes.js';
import { ExportSchema } from './modules/exports/exports.schemas.js';
import { integrationsRoutes } from './modules/integrations/integrations.routes.js';
import { keysRoutes } from './modules/keys/keys.routes.js';
import { ApiKeySchema } from './modules/keys/keys.schemas.js';
import { keyChangeAnnouncer, readKeysEpoch } from './modules/keys/keys-epoch.js';
import { membersRoutes } from './modules/members/members.routes.js';
import { mfaRoutes } from './modules/mfa/mfa.routes.js';
import { notificationsRoutes } from './modules/notifications/notifications.routes.js';
import { OperatorEventSchema } from './modules/operator-events/operator-events.schemas.js';
import { resourcesRoutes } from './modules/resources/resources.routes.js';
import { ResourceSchema } from './modules/resources/resources.schemas.js';
import { ssoRoutes } from './modules/sso/sso.routes.js';
import { usageRoutes } from './modules/usage/usage.routes.js';
import { LoggedRequestSchema, UsageSeriesSchema } from './modules/usage/usage.schemas.js';
import { usersRoutes } from './modules/users/users.routes.js';
import { UserSchema } from './modules/users/users.schemas.js';
import { deliveriesRoutes } from './modules/webhooks/deliveries.routes.js';
import { webhooksRoutes } from './modules/webhooks/webhooks.routes.js';
import { DeliverySchema, WebhookSchema } from './modules/webhooks/webhooks.schemas.js';
import { workspacesConsoleRoutes, workspacesRoutes } from './modules/workspaces/workspaces.routes.js';
import { createServices, type Services } from './services.js';

export interface AppDeps {
  config: Config;
  storage: Storage;
  clock?: Clock;
  redis?: Redis;
  /** Redis key prefix for rate-limit counters (default `wsvc:rl:`). */
  rateLimitNamespace?: string;
  /** Where the Redis breaker reports outages (default: the app's logger). */
  redisLog?: RedisLog;
  /** Services built elsewhere (tests share them with the worker); built here when absent. */
  services?: Services;
  /** Where log lines go (default stdout); tests read them. */
  logStream?: DestinationStream;
  /** Sees every route as it is registered (scripts/architecture-facts.ts lists them in ARCHITECTURE.md). */
  onRoute?: (route: RouteOptions) => void;
}

/** Idle time a keep-alive connection is held between requests (above common balancers' 60 s). */
const KEEP_ALIVE_MS = 65_000;

/** Builds the HTTP app from plugins and modules; never listens (see server.ts). */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { config, storage } = deps;
  const clock = deps.clock ?? systemClock;
  const services = deps.services ?? createServices({ storage, clock, config });

  const proxies = trustProxy(config);
  const app = Fastify({
    // Credentials never reach a log line: link query strings are cut, patterns redacted at every level (logging.ts).
    logger:
      config.LOG_LEVEL === 'silent'
        ? false
        : { ...loggerOptions(config.LOG_LEVEL), ...(deps.logStream ? { stream: deps.logStream } : {}) },
    // A request's child logger is built when it first logs (src/http/logging.ts, docs/performance.md#request-ids-and-loggers).
    childLoggerFactory: lazyChildLogger,
    genReqId: requestIds(),
    // request.ip is the client's address only behind proxies TRUST_PROXY names (docs/operations.md#behind-a-proxy).
    // A hop count trusts the nearest N hops, as proxy-addr does for a number (Fastify's types take only a function).
    trustProxy: typeof proxies === 'number' ? (_address: string, hop: number) => hop < proxies : proxies,
    requestIdHeader: false,
    bodyLimit: 1024 * 1024,
    // While closing, new requests get the 503 with the error body from installEarlyAnswers (Fastify's own has another body).
    return503OnClosing: false,
    // Timeouts that hold as set: Node checks them every second instead of every 30 s, so a
    // slowloris client is cut at HTTP_HEADERS_TIMEOUT_MS. No Host: answered by installEarlyAnswers.
    keepAliveTimeout: KEEP_ALIVE_MS,
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    http: {
      headersTimeout: Math.min(config.HTTP_HEADERS_TIMEOUT_MS, config.HTTP_REQUEST_TIMEOUT_MS),
      requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: 1000,
      requireHostHeader: false,
    },
    clientErrorHandler,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    frameworkErrors,
    // Response serializers compiled once per distinct schema (src/http/serializers.ts).
    schemaController: { compilersFactory: { buildSerializer: sharedSerializers } },
  });
  if (deps.onRoute) app.addHook('onRoute', deps.onRoute);

  // Redis behind a circuit breaker: a hung Redis costs one timeout, then requests skip it.
  const redis = deps.redis
    ? { client: deps.redis, guard: createRedisGuard(deps.redis, deps.redisLog ?? app.log) }
    : undefined;
  if (redis) app.addHook('onClose', async () => redis.guard.close());
  // PostgreSQL + Redis: verified keys are reused under the epoch every process shares in Redis, and this
  // process's writes that may change keys announce themselves to it (src/modules/keys/keys-epoch.ts, ARCHITECTURE.md "Revocation").
  const sharedEpoch = redis && !storage.dialect.keysEpoch ? readKeysEpoch(redis, config.REDIS_KEY_PREFIX) : undefined;
  if (redis && sharedEpoch && !storage.dialect.keyChanges) {
    const announcer = keyChangeAnnouncer(redis.client, config.REDIS_KEY_PREFIX);
    storage.dialect.keyChanges = announcer;
    app.addHook('onClose', async () => {
      if (storage.dialect.keyChanges === announcer) storage.dialect.keyChanges = undefined;
    });
  }
  app.server.on('connect', refuseConnect);
  installValidators(app);
  // PostgreSQL: after the first request that finds it unreachable, 503 at once until a probe answers (src/db/breaker.ts).
  const breaker = storage.probe
    ? createDatabaseBreaker({
        probe: storage.probe,
        isUnreachable: (err) => storage.dialect.isUnreachable(err),
        log: app.log,
      })
    : undefined;
  if (breaker) app.addHook('onClose', async () => breaker.close());
  installErrorHandler(app, storage.dialect, breaker);
  installRequestId(app);
  installEarlyAnswers(app, collectRoutes(app));
  if (breaker) installDatabaseBreaker(app, breaker);
  installJsonBody(app);
  for (const schema of [
    ErrorSchema,
    ResourceSchema,
    UserSchema,
    EventSchema,
    WebhookSchema,
    DeliverySchema,
    ApiKeySchema,
    UsageSeriesSchema,
    LoggedRequestSchema,
    PlanSchema,
    InvoiceLineSchema,
    PaymentAttemptSchema,
    UpcomingInvoiceSchema,
    InvoiceSchema,
    SubscriptionSchema,
    AuditEntrySchema,
    OperatorEventSchema,
    ExportSchema,
  ]) {
    app.addSchema(schema);
  }

  await installOpenApi(app);
  installAuth(app, services.keyRegistry, { sharedEpoch });
  await installConsoleSession(app, {
    consoleAuth: services.consoleAuth,
    publicUrl: publicUrl(config),
    secureCookie: publicUrl(config).startsWith('https:'),
    cookieMaxAgeS: config.CONSOLE_SESSION_MAX_H * 3600,
  });
  installNoUndeclaredInput(app);
  installRequestOrigin(app);
  // The free plan's hard cap: counted from the usage meter, shared in Redis when there is one, no
  // write on the request path (docs/billing.md#the-free-cap).
  // With payments with Stripe on, it also answers 402 payment_required for a key whose subscription is unpaid (read with the key).
  const planCap =
    (config.PLAN_LIMITS === 'on' || stripeOn(config)) && config.USAGE_METERING === 'on'
      ? createPlanCap({
          billing: services.billing,
          meter: services.usage.meter,
          clock,
          refreshMs: config.USAGE_FLUSH_MS,
          redis,
          keyPrefix: config.REDIS_KEY_PREFIX,
          billingPage: (workspaceId) => services.billing.billingPage(workspaceId),
          payments: stripeOn(config),
          limits: config.PLAN_LIMITS === 'on',
        })
      : undefined;
  await installRateLimit(app, {
    live: config.RATE_LIMIT_LIVE,
    test: config.RATE_LIMIT_TEST,
    windowS: config.RATE_LIMIT_WINDOW_S,
    redis,
    nameSpace: deps.rateLimitNamespace,
    keysEpochPrefix: config.REDIS_KEY_PREFIX,
    cap: planCap?.inline,
  });
  planCap?.install(app);
  installIdempotency(app, services.idempotency, services.uow);
  if (config.USAGE_METERING === 'on') {
    // Counted in memory, written every USAGE_FLUSH_MS and when the app closes (docs/usage.md).
    installUsageMetering(app, services.usage.meter, clock);
    services.usage.meter.start();
    app.addHook('onClose', async () => services.usage.meter.stop());
  }

  if (config.METRICS_TOKEN) {
    installMetrics(app, {
      token: config.METRICS_TOKEN,
      pendingDeliveries: services.deliveries.pendingCount,
      meter: services.usage.meter.stats,
      deliveries: services.delivery.stats,
    });
  }
  installHealth(app, { storage, redis: redis?.guard });

  const v1Routes = async (v1: FastifyInstance) => {
    await v1.register(usersRoutes, { users: services.users });
    await v1.register(resourcesRoutes, { resources: services.resources });
    await v1.register(webhooksRoutes, { webhooks: services.webhooks });
    await v1.register(deliveriesRoutes, {
      deliveries: services.deliveries,
      retentionDays: config.EVENT_RETENTION_DAYS,
    });
    await v1.register(eventsRoutes, { events: services.events, retentionDays: config.EVENT_RETENTION_DAYS });
    await v1.register(keysRoutes, { keys: services.keys });
    await v1.register(usageRoutes, { usage: services.usage, retentionDays: config.REQUEST_LOG_RETENTION_DAYS });
    await v1.register(billingRoutes, { billing: services.billing });
    await v1.register(auditRoutes, { audit: services.audit, retentionDays: config.AUDIT_RETENTION_DAYS });
    await v1.register(exportsRoutes, { exports: services.exports });
    await v1.register(workspacesRoutes, { deletion: services.workspaceDeletion });
  };
  await app.register(v1Routes, { prefix: '/v1' });
  await app.register(stripeWebhookRoutes, { billing: services.billing });
  await app.register(
    async (api) => {
      await api.register(consoleRoutes, {
        consoleAuth: services.consoleAuth,
        hasWorkspace: services.workspaces.any,
        // As the person, without the request's origin: the erasure records no address of theirs.
        eraseSelf: (email) => services.erasure.eraseSelf(services.uow.as(personActor(email))),
      });
      await api.register(membersRoutes, { members: services.members });
      await api.register(mfaRoutes, {
        mfa: services.mfa,
        passkeys: services.passkeys,
        consoleAuth: services.consoleAuth,
      });
      await api.register(ssoRoutes, {
        sso: services.sso,
        consoleAuth: services.consoleAuth,
        secureCookie: publicUrl(config).startsWith('https:'),
      });
      await api.register(notificationsRoutes, { notifications: services.notifications });
      await api.register(integrationsRoutes, { integrations: services.integrations });
      await api.register(billingConsoleRoutes, { billing: services.billing });
      await api.register(workspacesConsoleRoutes, { deletion: services.workspaceDeletion });
      // The console calls the same routes and services as /v1, authenticated by its session (docs/console.md).
      await api.register(
        async (mirror) => {
          mirror.addHook('onRoute', (route) => {
            route.config = { ...(route.config as object), console: 'actor' } as typeof route.config;
            route.schema = { ...route.schema, hide: true };
          });
          await v1Routes(mirror);
        },
        { prefix: '/v1' },
      );
    },
    { prefix: '/console/api' },
  );
  await installConsoleStatic(app);
  return app;
}
