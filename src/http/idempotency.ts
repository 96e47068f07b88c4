import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onSendAsyncHookHandler,
  preHandlerAsyncHookHandler,
} from 'fastify';
import { fieldError, type StoredResponse } from '../kernel/errors.js';
import { type Actor, type Principal, withOrigin } from '../kernel/principal.js';
import {
  hashRequest,
  type IdempotencyService,
  type IdempotentRequest,
} from '../modules/idempotency/idempotency.service.js';
import type { Unit, UnitOfWork } from '../platform/unit-of-work.js';

const KEY_RE = /^[\x20-\x7e]{1,255}$/;

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: IdempotentRequest | null;
    /**
     * The door to a change as this request's principal, for the service the route calls. Given the `reply` and
     * the answer's `status` (a POST route), a request with an Idempotency-Key stores its `{data}` answer in the
     * change's transaction, so the answer and the change commit together; `stored` says what of it is kept for a
     * replay (a new key's answer without its plaintext).
     */
    unit(reply?: FastifyReply, status?: number, stored?: (result: never) => unknown): Unit<Principal>;
    /** The door for someone this request acts as who is not its principal (a sign-in, a link), its origin named. */
    unitAs<A extends Actor>(actor: A): Unit<A>;
  }
}

/**
 * The doors to changes (`request.unit`, `request.unitAs`), and the HTTP side of idempotency (docs/api.md#idempotency;
 * the rules are in modules/idempotency): preHandler reads the key and replays or refuses a known one; a write route
 * passes `req.unit(reply, status)` to its service so the answer commits with the change; onSend keeps answers given
 * without a change (4xx). Runs after validation: invalid requests are not stored.
 */
export function installIdempotency(app: FastifyInstance, idempotency: IdempotencyService, uow: UnitOfWork): void {
  app.decorateRequest('idempotency', null);
  // An aborted request may never reach onSend: free its key anyway.
  app.addHook('onRequestAbort', async (request) => {
    if (request.idempotency) idempotency.done(request.idempotency);
  });
  app.decorateRequest(
    'unit',
    function (
      this: FastifyRequest,
      reply?: FastifyReply,
      status?: number,
      stored: (result: never) => unknown = (result) => result,
    ) {
      const req = this.idempotency;
      if (!req || !reply || status === undefined) return uow.as(this.principal);
      const hooks = idempotency.hooks<never>(
        req,
        status,
        (result) => reply.serializeInput({ data: stored(result) }, String(status)) as string,
      );
      return uow.as(this.principal, hooks);
    },
  );
  app.decorateRequest('unitAs', function <A extends Actor>(this: FastifyRequest, actor: A) {
    return uow.as(withOrigin(actor, this.origin));
  });

  const preHandler = async (request: FastifyRequest) => {
    if (request.method !== 'POST' || !request.principal) return;
    const raw = request.headers['idempotency-key'];
    if (raw === undefined) return;
    const key = Array.isArray(raw) ? raw[0] : raw;
    if (key === undefined || !KEY_RE.test(key)) {
      throw fieldError(
        'Idempotency-Key',
        'invalid_format',
        'Idempotency-Key must be 1 to 255 printable ASCII characters.',
      );
    }
    const { workspaceId, env } = request.principal;
    const req: IdempotentRequest = {
      tenant: { workspaceId, env },
      actor: request.principal,
      key,
      hash: hashRequest(request.method, request.url.split('?')[0] ?? '', request.body),
      settled: false,
    };
    request.idempotency = req;
    await idempotency.check(req);
  };

  const onSend = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const req = request.idempotency;
    // A 5xx is not an answer worth replaying, nor a 401 (the key was revoked while the request ran,
    // docs/api.md#keys-scopes-and-roles): the key stays free for a retry, possibly with another key.
    if (!req) return payload;
    idempotency.done(req);
    if (req.settled || reply.statusCode >= 500 || reply.statusCode === 401) return payload;
    await idempotency.remember(uow.as(req.actor), req, reply.statusCode, String(payload ?? ''));
    return payload;
  };

  // Performance (docs/performance.md#callback-style-hooks): only POST routes carry these hooks, so GET, PUT and DELETE skip two async hooks.
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST')) return;
    route.preHandler = [...hooks(route.preHandler), preHandler as preHandlerAsyncHookHandler];
    route.onSend = [...hooks(route.onSend), onSend as onSendAsyncHookHandler];
  });
}

function hooks<T>(h: T | T[] | undefined): T[] {
  return h === undefined ? [] : Array.isArray(h) ? h : [h];
}

/** Sends a stored answer again (docs/api.md#idempotency). */
export function replay(reply: FastifyReply, stored: StoredResponse) {
  reply.header('idempotent-replayed', 'true');
  reply.code(stored.status);
  if (stored.body === '') return reply.send();
  return reply
    .type('application/json; charset=utf-8')
    .serializer((p: unknown) => p as string)
    .send(stored.body);
}
