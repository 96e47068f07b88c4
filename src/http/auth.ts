import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ForbiddenError, UnauthorizedError } from '../lib/errors.js';
import type { Principal } from '../lib/principal.js';
import type { KeysService, VerifyResult } from '../modules/keys/keys.service.js';
import { allows, type Scope } from '../modules/keys/scopes.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a route needs; routes without one are public (health, docs). */
    scope?: Scope;
  }
  interface FastifyRequest {
    /** Who is calling (set by authentication on every route with a scope). */
    principal: Principal;
  }
}

/**
 * Authenticates every route that names a scope, before the body is read (onRequest: 401 with
 * the error codes). The scope check (403, docs/api.md#keys-scopes-and-roles: key scopes ∩ the owner's current role) runs in
 * preParsing, i.e. after the per-key rate limit (a route-level onRequest hook), so a 403 carries
 * the X-RateLimit-* headers and counts against the key like any authenticated request (docs/api.md#rate-limits).
 */
export function installAuth(app: FastifyInstance, keys: KeysService): void {
  app.decorateRequest('principal', null as never);
  // Callback style (docs/performance.md, "Earlier changes" 4): a key verified from the cache answers without a promise.
  app.addHook('onRequest', (request, _reply, done) => {
    const scope = request.routeOptions.config?.scope;
    // Console routes authenticate with the session cookie instead (console-session.ts).
    if (!scope || request.routeOptions.config?.console) return done();
    const result = keys.verifyNow(request.headers.authorization);
    if (result instanceof Promise) {
      result.then((r) => done(authenticate(request, r)), done);
    } else {
      done(authenticate(request, result));
    }
  });
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const scope = request.routeOptions.config?.scope;
    if (scope && !allows(request.principal.role, request.principal.scopes, scope)) {
      const who = request.principal.kind === 'session' ? 'Your role' : "This API key (or its owner's role)";
      return done(new ForbiddenError(`${who} lacks the scope ${scope}.`));
    }
    done(null, payload);
  });
}

/** Sets the principal, or returns the 401 to answer. */
function authenticate(request: FastifyRequest, result: VerifyResult): UnauthorizedError | undefined {
  if (!result.ok) return new UnauthorizedError(result.code);
  request.principal = result.principal;
  return undefined;
}
