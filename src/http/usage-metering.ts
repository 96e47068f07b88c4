import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify';
import type { Clock } from '../kernel/clock.js';
import type { UsageMeter } from '../modules/usage/meter.js';
import { loggableBody, loggablePath } from '../modules/usage/redact.js';

/**
 * Counts every answer to a request authenticated with an API key, and keeps its failures for the
 * request log (docs/usage.md): in memory only, the meter writes later. Console (session) requests
 * and unauthenticated ones are not counted.
 */
export function installUsageMetering(app: FastifyInstance, meter: UsageMeter, clock: Clock): void {
  // Route-level hooks on authenticated routes only, each knowing its route template: nothing runs
  // for public routes, and no per-request `routeOptions` object is built (docs/usage.md#cost).
  app.addHook('onRoute', (route) => {
    if (!route.config?.scope) return;
    const template = route.url;
    const named = typeof route.method === 'string' ? `${route.method} ${template}` : undefined;
    const onResponse: onResponseHookHandler = (request, reply, done) => {
      if (request.principal?.kind === 'api_key') observe(meter, clock, template, named, request, reply);
      done();
    };
    route.onResponse = [...asArray(route.onResponse), onResponse];
  });
}

function asArray<T>(hooks: T | T[] | undefined): T[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}

function observe(
  meter: UsageMeter,
  clock: Clock,
  template: string,
  named: string | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  const p = request.principal;
  if (p.kind !== 'api_key') return;
  const latencyMs = reply.elapsedTime;
  const status = reply.statusCode;
  const route = named ?? `${request.method} ${template}`;
  meter.record({ workspaceId: p.workspaceId, env: p.env, keyId: p.keyId, route, status, latencyMs });
  if (status < 400) return;
  // Set by the error handler's send (http/errors.ts); every 4xx/5xx of /v1 is answered there.
  const err = request.sentError;
  meter.recordFailure({
    requestId: request.id,
    workspaceId: p.workspaceId,
    env: p.env,
    keyId: p.keyId,
    userId: p.userId,
    method: request.method,
    route: template,
    path: loggablePath(request.url),
    status,
    errorCode: err?.code ?? null,
    errorMessage: err?.message?.slice(0, 1000) ?? null,
    latencyMs,
    body: loggableBody(request.rawBody ?? request.body),
    at: clock.now(),
  });
}
