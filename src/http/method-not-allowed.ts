import type { FastifyInstance } from 'fastify';
import { AppError } from '../lib/errors.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

declare module 'fastify' {
  interface FastifyInstance {
    /** Every /v1 path and its methods (tests check the OpenAPI document and auth matrix cover them). */
    v1Routes: ReadonlyMap<string, ReadonlySet<string>>;
  }
}

/** Records the methods of every route so that known paths answer 405 to the others (docs/api.md#errors). */
export function collectRoutes(app: FastifyInstance): Map<string, Set<string>> {
  const table = new Map<string, Set<string>>();
  app.decorate('v1Routes', table);
  app.addHook('onRoute', (route) => {
    // Hidden routes (the document itself, and the 405 routes added below) are not API paths.
    if (!route.url.startsWith('/v1/') || (route.schema as { hide?: boolean } | undefined)?.hide) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const set = table.get(route.url) ?? new Set<string>();
    // HEAD comes with every GET (Fastify's exposeHeadRoutes), so it is allowed where GET is.
    for (const m of methods) set.add(m);
    if (set.has('GET')) set.add('HEAD');
    table.set(route.url, set);
  });
  return table;
}

/** Adds a 405 route (with `Allow`) for each method a known path does not have. */
export function installMethodNotAllowed(app: FastifyInstance, table: Map<string, Set<string>>): void {
  for (const [url, methods] of [...table]) {
    const allow = [...methods].sort().join(', ');
    const missing = METHODS.filter((m) => !methods.has(m));
    if (missing.length === 0) continue;
    app.route({
      method: missing,
      url,
      schema: { hide: true },
      handler: async () => {
        throw new AppError(
          405,
          'method_not_allowed',
          `This path does not support this method; use ${allow}.`,
          undefined,
          {
            allow,
          },
        );
      },
    });
  }
}
