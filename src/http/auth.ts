import type { FastifyInstance } from 'fastify';
import { ForbiddenError, UnauthorizedError } from '../lib/errors.js';
import type { Actor } from '../modules/keys/actor.js';
import type { KeysService } from '../modules/keys/keys.service.js';
import { allows, type Scope } from '../modules/keys/scopes.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The D9 scope a route needs; routes without one are public (health, docs). */
    scope?: Scope;
  }
  interface FastifyRequest {
    actor: Actor;
  }
}

/**
 * Authenticates every route that names a scope, before the body is read (onRequest: 401 with
 * the D1 codes). The scope check (403, D9: key scopes ∩ the owner's current role) runs in
 * preParsing, i.e. after the per-key rate limit (a route-level onRequest hook), so a 403 carries
 * the X-RateLimit-* headers and counts against the key like any authenticated request (D11).
 */
export function installAuth(app: FastifyInstance, keys: KeysService): void {
  app.decorateRequest('actor', null as unknown as Actor);
  app.addHook('onRequest', async (request) => {
    const scope = request.routeOptions.config?.scope;
    if (!scope) return;
    const result = await keys.verify(request.headers.authorization);
    if (!result.ok) throw new UnauthorizedError(result.code);
    request.actor = result.actor;
  });
  app.addHook('preParsing', async (request) => {
    const scope = request.routeOptions.config?.scope;
    if (!scope) return;
    if (!allows(request.actor.role, request.actor.scopes, scope)) {
      throw new ForbiddenError(`This API key (or its owner's role) lacks the scope ${scope}.`);
    }
  });
}
