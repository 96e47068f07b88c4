import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { createResource, describeAuthMatrix, type RouteCase, registeredRoutes } from './helpers/auth-matrix.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const resourceUrl = async (ctx: { t: TestApp; key: string }, suffix = '') =>
  `/v1/resources/${await createResource(ctx.t, ctx.key)}${suffix}`;

/** Every route of the API. A new route must be added here (the last test checks). */
const ROUTES: RouteCase[] = [
  {
    method: 'GET',
    path: '/v1/users/me',
    scope: 'users:read',
    success: 200,
    prepare: async () => ({ url: '/v1/users/me' }),
  },
  {
    method: 'PATCH',
    path: '/v1/users/me',
    scope: 'users:write',
    success: 200,
    prepare: async () => ({ url: '/v1/users/me', body: { name: 'Matrix', timezone: 'Europe/Paris' } }),
  },
  { method: 'GET', path: '/v1/users', scope: 'users:read', success: 200, prepare: async () => ({ url: '/v1/users' }) },
  {
    method: 'POST',
    path: '/v1/resources',
    scope: 'resources:write',
    success: 201,
    prepare: async () => ({ url: '/v1/resources', body: { name: 'Matrix', type: 'custom', metadata: { a: 'b' } } }),
  },
  {
    method: 'GET',
    path: '/v1/resources',
    scope: 'resources:read',
    success: 200,
    prepare: async () => ({ url: '/v1/resources?limit=5' }),
  },
  {
    method: 'GET',
    path: '/v1/resources/:id',
    scope: 'resources:read',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await resourceUrl(ctx) }),
  },
  {
    method: 'PUT',
    path: '/v1/resources/:id',
    scope: 'resources:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await resourceUrl(ctx), body: { name: 'Renamed', metadata: { x: 'y' } } }),
  },
  {
    method: 'DELETE',
    path: '/v1/resources/:id',
    scope: 'resources:write',
    success: 204,
    byId: true,
    prepare: async (ctx) => ({ url: await resourceUrl(ctx) }),
  },
  {
    method: 'POST',
    path: '/v1/resources/:id/archive',
    scope: 'resources:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await resourceUrl(ctx, '/archive') }),
  },
  {
    method: 'POST',
    path: '/v1/resources/:id/unarchive',
    scope: 'resources:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => {
      const url = await resourceUrl(ctx);
      const res = await ctx.t.request({ method: 'POST', url: `${url}/archive`, key: ctx.key });
      expect(res.statusCode).toBe(200);
      return { url: `${url}/unarchive` };
    },
  },
];

describeAuthMatrix(() => t, ROUTES);

describe('auth matrix coverage', () => {
  it('covers every registered /v1 route (add new routes to ROUTES)', () => {
    const covered = ROUTES.map((r) => `${r.method} ${r.path}`).sort();
    expect(covered).toEqual(registeredRoutes(t).filter((r) => !r.startsWith('OPTIONS ')));
  });
});
