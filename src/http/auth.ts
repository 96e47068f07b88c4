import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Env } from '../db/types.js';
import { ForbiddenError, UnauthorizedError } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import { allows, type Scope } from '../kernel/scopes.js';
import type { KeyRegistry, KeysEpoch, VerifyResult } from '../modules/keys/key-registry.service.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope a route needs; routes without one are public (health, docs). */
    scope?: Scope;
  }
  interface FastifyRequest {
    /** Who is calling (set by authentication on every route with a scope). */
    principal: Principal;
    /**
     * A key answered from the cache under a shared epoch not yet compared with the current one: the
     * rate limit's Redis call returns it, and `confirmCachedKey` keeps or replaces the principal.
     */
    keyToConfirm: KeyToConfirm | null;
  }
}

/**
 * Authenticates every route that names a scope, before the body is read (onRequest: 401 with
 * the error codes). The scope check (403, docs/api.md#keys-scopes-and-roles: key scopes ∩ the owner's current role) runs in
 * preParsing, i.e. after the per-key rate limit (a route-level onRequest hook), so a 403 carries
 * the X-RateLimit-* headers and counts against the key like any authenticated request (docs/api.md#rate-limits).
 */
export function installAuth(
  app: FastifyInstance,
  keys: KeyRegistry,
  /**
   * `sharedEpoch`: the key-cache epoch shared in Redis (src/modules/keys/keys-epoch.ts), where the database has no
   * epoch of its own (PostgreSQL). A cached key is then taken provisionally and confirmed by the rate
   * limit's Redis call (`confirmCachedKey`); the first request of a key reads the epoch, then the key.
   */
  opts: { sharedEpoch?: () => Promise<string | null> } = {},
): void {
  app.decorateRequest('principal', null as never);
  app.decorateRequest('keyToConfirm', null);
  const { sharedEpoch } = opts;
  // Callback style (docs/performance.md#callback-style-hooks): a key verified from the cache answers without a promise.
  app.addHook('onRequest', (request, _reply, done) => {
    const scope = request.routeOptions.config?.scope;
    // Console routes authenticate with the session cookie instead (console-session.ts).
    if (!scope || request.routeOptions.config?.console) return done();
    if (sharedEpoch) return authenticateShared(request, keys, sharedEpoch, done);
    const result = keys.verifyNow(request.headers.authorization);
    if (result instanceof Promise) {
      result.then((r) => done(authenticate(request, r)), done);
    } else {
      done(authenticate(request, result));
    }
  });
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const checkScope = (err?: Error) => {
      if (err) return done(err);
      const scope = request.routeOptions.config?.scope;
      if (scope && !allows(request.principal.role, request.principal.scopes, scope)) {
        const who = request.principal.kind === 'session' ? 'Your role' : "This API key (or its owner's role)";
        return done(new ForbiddenError(`${who} lacks the scope ${scope}.`));
      }
      done(null, payload);
    };
    // Fail closed: a provisional key that no rate-limit call confirmed (a route without the limit hook)
    // is read from the database here, before anything is answered.
    if (request.keyToConfirm !== null) confirmCachedKey(request, undefined, checkScope);
    else checkScope();
  });
}

export interface KeyToConfirm {
  keys: KeyRegistry;
  digest: string;
  env: Env;
  epoch: KeysEpoch;
}

/** Authentication under the shared epoch: a cached key provisionally, else the epoch, then the key. */
function authenticateShared(
  request: FastifyRequest,
  keys: KeyRegistry,
  sharedEpoch: () => Promise<string | null>,
  done: (err?: Error) => void,
): void {
  const parsed = keys.parseHeader(request.headers.authorization);
  if (!parsed.ok) {
    done(new UnauthorizedError(parsed.code, parsed.message));
    return;
  }
  const hit = keys.cached(parsed.digest);
  if (hit) {
    request.principal = hit.principal;
    request.keyToConfirm = { keys, digest: parsed.digest, env: parsed.env, epoch: hit.epoch };
    done();
    return;
  }
  // The epoch read before the key: an entry filed under it goes stale with any change after the read.
  sharedEpoch()
    .then((at) => keys.verifyAt(parsed.digest, parsed.env, at ?? undefined))
    .then((r) => done(authenticate(request, r)), done);
}

/**
 * Confirms a provisionally cached key (request.keyToConfirm) with the epoch the rate limit's Redis call
 * returned: the same epoch keeps it; another, or none (unsettled, Redis not answering), reads the key
 * from the database (filed under `current` when there is one). `done` gets the 401 of a key that no
 * longer verifies (or the database's error).
 */
export function confirmCachedKey(
  request: FastifyRequest,
  current: string | null | undefined,
  done: (err?: Error) => void,
): void {
  const pending = request.keyToConfirm;
  request.keyToConfirm = null;
  if (!pending || (current != null && current === pending.epoch)) {
    done();
    return;
  }
  pending.keys.verifyAt(pending.digest, pending.env, current ?? undefined).then(
    (r) => done(authenticate(request, r)),
    (err: Error) => done(err),
  );
}

/** Sets the principal, or returns the 401 to answer. */
function authenticate(request: FastifyRequest, result: VerifyResult): UnauthorizedError | undefined {
  if (!result.ok) return new UnauthorizedError(result.code, result.message);
  request.principal = result.principal;
  return undefined;
}
