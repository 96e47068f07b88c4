import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DatabaseBreaker } from '../db/breaker.js';
import type { Dialect } from '../db/dialect.js';
import { AppError, type ErrorDetail, StoredResponse, UnavailableError } from '../kernel/errors.js';
import { replay } from './idempotency.js';
import { lingerOnClose } from './lingering-close.js';
import { invalidPart, toDetails } from './validation.js';

/** Builds the error body. */
export function errorBody(request: FastifyRequest, code: string, message: string, details?: ErrorDetail[]) {
  return { error: { code, message, request_id: String(request.id), ...(details ? { details } : {}) } };
}

const FASTIFY_CODES: Record<string, { status: number; code: string; message: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: 'unsupported_media_type',
    message: 'Request bodies must be JSON with Content-Type: application/json.',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: {
    status: 413,
    code: 'payload_too_large',
    message: 'The request body is larger than 1 MiB.',
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'invalid_json', message: 'The request body is not valid JSON.' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'invalid_json', message: 'The request body is empty.' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    code: 'invalid_request',
    message: 'Content-Length does not match the body.',
  },
};

declare module 'fastify' {
  interface FastifyRequest {
    /** The error code and message this request was answered with, if it failed. */
    sentError?: { code: string; message: string };
  }
}

/**
 * Maps any thrown error to its status and error body, once for the whole app. `breaker` hears of
 * every error that means the database is unavailable (it opens on those that mean unreachable).
 */
export function installErrorHandler(app: FastifyInstance, dialect: Dialect, breaker?: DatabaseBreaker): void {
  app.setErrorHandler((err: FastifyError, request, reply) => {
    if (err instanceof StoredResponse) return replay(reply, err);
    if (err instanceof AppError) {
      if (err.headers) reply.headers(err.headers);
      return send(reply, err.statusCode, errorBody(request, err.code, err.message, err.details));
    }
    if (err.validation) {
      const where = err.validationContext === 'querystring' ? 'query' : (err.validationContext ?? 'request');
      const e = invalidPart(where, toDetails(err.validation as never, where));
      return send(reply, e.statusCode, errorBody(request, e.code, e.message, e.details));
    }
    const known = err.code ? FASTIFY_CODES[err.code] : undefined;
    if (known) return send(reply, known.status, errorBody(request, known.code, known.message));
    if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) {
      return send(reply, 400, errorBody(request, 'invalid_json', 'The request body is not valid JSON.'));
    }
    // An error of the client's own connection (a body cut off: ECONNRESET "aborted") comes with the
    // 400 that Fastify gives request-stream errors; only the database's errors reach the breaker.
    if (err.statusCode === undefined && dialect.isUnavailable(err)) {
      request.log.warn({ err }, 'database unavailable');
      breaker?.failed(err);
      const u = new UnavailableError();
      reply.headers(u.headers ?? {});
      return send(reply, 503, errorBody(request, u.code, u.message));
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return send(reply, err.statusCode, errorBody(request, 'invalid_request', 'The request is not valid.'));
    }
    request.log.error({ err }, 'unhandled error');
    return send(reply, 500, errorBody(request, 'internal_error', 'Something went wrong on our side.'));
  });

  app.setNotFoundHandler((request, reply) => {
    send(reply, 404, errorBody(request, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}.`));
  });
}

/**
 * Errors the router raises before any hook runs (an id longer than the router takes, a path
 * with broken %-encoding): no such route or object, so a 404 with the error body with the request id.
 */
export function frameworkErrors(_err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('x-request-id', request.id);
  return send(reply, 404, errorBody(request, 'not_found', 'No such route or object.'));
}

function send(reply: FastifyReply, status: number, body: { error: { code: string; message: string } }) {
  closeIfBodyUnread(reply.request, reply);
  // Kept for the failed-request log (docs/usage.md#request-log), read after the response.
  reply.request.sentError = body.error;
  // The route's response schema may not list this status; send the error body as plain JSON.
  return reply.code(status).type('application/json; charset=utf-8').serializer(JSON.stringify).send(body);
}

/**
 * An answer sent before the request's body was read (401, 404, 405, 413, …) closes the
 * connection and says so: Node would otherwise read and discard whatever the client keeps sending.
 * The close lingers (lingering-close.ts): a bounded remainder of the body is read and discarded
 * first, so that the client reads the answer instead of a reset.
 */
export function closeIfBodyUnread(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (raw.complete) return;
  const length = raw.headers['content-length'];
  if ((length !== undefined && length !== '0') || raw.headers['transfer-encoding'] !== undefined) {
    reply.header('connection', 'close');
    lingerOnClose(raw);
  }
}

/**
 * While the database breaker is open (src/db/breaker.ts), every route that needs the database (those
 * with a scope, and the console's API) is answered 503 service_unavailable with Retry-After at once,
 * before authentication, instead of waiting out the query timeout. Health and documentation still answer.
 */
export function installDatabaseBreaker(app: FastifyInstance, breaker: DatabaseBreaker): void {
  app.addHook('onRequest', (request, _reply, done) => {
    if (!breaker.isOpen()) return done();
    const config = request.routeOptions.config;
    if (!config?.scope && !request.routeOptions.url?.startsWith('/console/api/')) return done();
    done(new UnavailableError());
  });
}
