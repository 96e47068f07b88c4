import type { FastifyInstance } from 'fastify';
import type { RequestOrigin } from '../kernel/audit-actions.js';
import { withOrigin } from '../kernel/principal.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Where the request came from, for the audit log: its id, the client's address (TRUST_PROXY honoured), user agent. */
    readonly origin: RequestOrigin;
  }
}

/**
 * Gives the principal of every request that may write (not GET or HEAD: reads record nothing) the
 * request's origin, which the audit entries of its changes name (docs/api.md#audit-log). Routes that
 * act for someone not yet a principal (a sign-in) take `request.origin` for their actor (`withOrigin`).
 */
export function installRequestOrigin(app: FastifyInstance): void {
  app.decorateRequest('origin', {
    getter() {
      const ua = this.headers['user-agent'];
      return { requestId: this.id, ip: this.ip, userAgent: typeof ua === 'string' ? ua.slice(0, 512) : null };
    },
  });
  // Callback style: no promise per request (docs/performance.md#callback-style-hooks).
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.principal && request.method !== 'GET' && request.method !== 'HEAD') {
      request.principal = withOrigin(request.principal, request.origin);
    }
    done();
  });
}
