import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { newId } from '../kernel/ids.js';
import { closeIfBodyUnread, errorBody } from './errors.js';
import { allowedMethods } from './method-not-allowed.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A catch-all that stands for "no route" (the console API's, so that it is not the app's page). */
    unmatched?: boolean;
  }
}

/**
 * Requests the router has no route for, HTTP/1.1 requests without `Host`, and requests that
 * arrive while the server shuts down, answered in the first onRequest hook: before
 * authentication and before any byte of the body is read or parsed. A known path with another
 * method (a /v1 or console API path) is a 405 with `Allow`, any other path a 404; while closing, a 503.
 */
export function installEarlyAnswers(
  app: FastifyInstance,
  tables: { v1: ReadonlyMap<string, ReadonlySet<string>>; console: ReadonlyMap<string, ReadonlySet<string>> },
): void {
  const allowV1 = allowedMethods(tables.v1);
  const allowConsole = allowedMethods(tables.console);
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    if (closing) {
      // Fastify has set `Connection: close`: the client retries elsewhere, on a new connection.
      reply.header('retry-after', '1');
      const message = 'The server is shutting down; retry the request.';
      return void sendEarly(request, reply, 503, errorBody(request, 'service_unavailable', message));
    }
    if (request.raw.httpVersion === '1.1' && !request.headers.host) {
      const message = 'HTTP/1.1 requests need a Host header.';
      reply.header('connection', 'close');
      return void sendEarly(request, reply, 400, errorBody(request, 'invalid_request', message));
    }
    if (!request.is404 && !request.routeOptions.config?.unmatched) return done();
    const path = request.url.split('?')[0] ?? '/';
    const allow = path.startsWith('/v1/')
      ? allowV1(path)
      : path.startsWith('/console/api/')
        ? allowConsole(path)
        : undefined;
    if (allow) {
      reply.header('allow', allow);
      const message = `This path does not support ${request.method}; use ${allow}.`;
      return void sendEarly(request, reply, 405, errorBody(request, 'method_not_allowed', message));
    }
    sendEarly(request, reply, 404, errorBody(request, 'not_found', `No route ${request.method} ${path}.`));
  });
}

function sendEarly(request: FastifyRequest, reply: FastifyReply, status: number, body: unknown): void {
  closeIfBodyUnread(request, reply);
  reply.code(status).type('application/json; charset=utf-8').serializer(JSON.stringify).send(body);
}

/** Node's parser errors (llhttp codes) that have their own status; anything else is a 400. */
const CLIENT_ERRORS: Record<string, { status: number; code: string; message: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    code: 'headers_too_large',
    message: 'The request line and headers are larger than 16 KiB.',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    code: 'request_timeout',
    message: 'The request was not received in time.',
  },
  HPE_INVALID_METHOD: {
    status: 400,
    code: 'invalid_request',
    message: 'Unknown HTTP method; this API uses GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS.',
  },
  HPE_INVALID_CONTENT_LENGTH: {
    status: 400,
    code: 'invalid_request',
    message: 'The Content-Length header is not a valid length.',
  },
  HPE_UNEXPECTED_CONTENT_LENGTH: {
    status: 400,
    code: 'invalid_request',
    message: 'Content-Length cannot be combined with Transfer-Encoding.',
  },
};

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (a malformed request line or
 * header, headers over 16 KiB, a request or headers timeout): answered on the raw socket with
 * the error body and `Connection: close`, then the socket is closed. No body to a HEAD request.
 */
export function clientErrorHandler(err: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const inProgress = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inProgress?.headersSent) {
    socket.destroy();
    return;
  }
  const known = (err.code && CLIENT_ERRORS[err.code]) || {
    status: 400,
    code: 'invalid_request',
    message: 'The request is not valid HTTP.',
  };
  const head = Buffer.isBuffer(err.rawPacket) && err.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
  answerRaw(socket, known, { head });
}

/**
 * CONNECT (a proxy tunnel request) is not for this server: Node hands it over as a bare socket,
 * which would otherwise be dropped without an answer.
 */
export function refuseConnect(_req: unknown, socket: Socket): void {
  const message = 'This server is not a proxy; CONNECT is not supported.';
  answerRaw(socket, { status: 405, code: 'method_not_allowed', message });
}

/** Writes one error response (error body) on a raw socket with `Connection: close`, then closes it. */
function answerRaw(
  socket: Socket,
  error: { status: number; code: string; message: string },
  opts: { head?: boolean } = {},
): void {
  const requestId = newId('request');
  const body = JSON.stringify({ error: { code: error.code, message: error.message, request_id: requestId } });
  const response = [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    '',
    opts.head ? '' : body,
  ].join('\r\n');
  // Closed once written, whatever the client does next (a slowloris peer never closes its side).
  socket.end(response, () => socket.destroy());
}
