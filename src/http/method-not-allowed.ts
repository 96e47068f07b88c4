import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** Every /v1 path and its methods (tests check the OpenAPI document and auth matrix cover them). */
    v1Routes: ReadonlyMap<string, ReadonlySet<string>>;
  }
}

/** Path pattern → the methods it answers. */
export type RouteTable = Map<string, Set<string>>;

/** Records the methods of every /v1 and console API route so that known paths answer 405 to the others (docs/api.md#errors). */
export function collectRoutes(app: FastifyInstance): { v1: RouteTable; console: RouteTable } {
  const table = new Map<string, Set<string>>();
  const consoleTable = new Map<string, Set<string>>();
  app.decorate('v1Routes', table);
  app.addHook('onRoute', (route) => {
    const isV1 = route.url.startsWith('/v1/') && !(route.schema as { hide?: boolean } | undefined)?.hide;
    // Hidden /v1 routes (the document itself) are not API paths; the console API (its own routes and its /v1 mirror) is.
    const isConsole = route.url.startsWith('/console/api/') && !route.url.includes('*');
    const target = isV1 ? table : isConsole ? consoleTable : undefined;
    if (!target) return;
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const set = target.get(route.url) ?? new Set<string>();
    // HEAD comes with every GET (Fastify's exposeHeadRoutes), so it is allowed where GET is.
    for (const m of methods) set.add(m);
    if (set.has('GET')) set.add('HEAD');
    target.set(route.url, set);
  });
  return { v1: table, console: consoleTable };
}

/**
 * The `Allow` value of a known path (`/v1/resources/res_…` matches `/v1/resources/:id`), or
 * undefined for a path the API does not have. Asked only for requests no route matched: a
 * method the path lacks, TRACE, or one Fastify does not route at all (PROPFIND, …).
 */
export function allowedMethods(table: ReadonlyMap<string, ReadonlySet<string>>) {
  let patterns: { re: RegExp; allow: string }[] | undefined;
  return (path: string): string | undefined => {
    patterns ??= [...table].map(([url, methods]) => ({
      re: new RegExp(`^${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z0-9_]+/g, '[^/]+')}/?$`),
      allow: [...methods].sort().join(', '),
    }));
    return patterns.find((p) => p.re.test(path))?.allow;
  };
}
