import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { requestIdGenerator } from '../kernel/ids.js';

const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Fastify's genReqId: echoes a sane incoming X-Request-Id, else makes a `req_…` id (docs/api.md#ids; one generator per app). */
export function requestIds(): (req: IncomingMessage) => string {
  const next = requestIdGenerator();
  return (req) => {
    const incoming = req.headers['x-request-id'];
    if (typeof incoming === 'string' && SANE_ID.test(incoming)) return incoming;
    return next();
  };
}

/** Puts X-Request-Id on every response. */
export function installRequestId(app: FastifyInstance): void {
  // Callback style: no promise per request for a synchronous hook (docs/performance.md#callback-style-hooks).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
}
