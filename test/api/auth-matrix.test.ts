import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { json, startTestApp, type TestApp } from '../helpers/app.js';
import { createResource, describeAuthMatrix, type RouteCase, registeredRoutes } from '../helpers/auth-matrix.js';

// Backends: both — every route's keys, roles, scopes and ids are read from storage, and each refusal must change nothing there
// Tier: quick

/** A public address literal: passes the webhook URL rules without DNS, and no worker runs here to dial it. */
const HOOK_URL = 'https://93.184.216.34/hooks/matrix';

const webhookUrl = async (ctx: { t: TestApp; key: string }, suffix = '') => {
  const res = await ctx.t.request({
    method: 'POST',
    url: '/v1/webhooks',
    key: ctx.key,
    body: { url: HOOK_URL, events: ['*'] },
  });
  expect(res.statusCode, res.body).toBe(201);
  return `/v1/webhooks/${json(res).data.id}${suffix}`;
};

/** A webhook with one pending delivery (of a resource.created event); returns the delivery's URL. */
const deliveryUrl = async (ctx: { t: TestApp; key: string }, suffix = '') => {
  const hook = await webhookUrl(ctx);
  await createResource(ctx.t, ctx.key);
  const res = await ctx.t.request({ method: 'GET', url: `${hook}/deliveries`, key: ctx.key });
  expect(res.statusCode, res.body).toBe(200);
  return `${hook}/deliveries/${json(res).data[0].id}${suffix}`;
};

const eventUrl = async (ctx: { t: TestApp; key: string }) => {
  await createResource(ctx.t, ctx.key);
  const res = await ctx.t.request({ method: 'GET', url: '/v1/events?limit=1', key: ctx.key });
  expect(res.statusCode, res.body).toBe(200);
  return `/v1/events/${json(res).data[0].id}`;
};

/** A key made through the API with `ctx.key` (so owned by that key's user), in `ctx.env`. */
const keyUrl = async (ctx: { t: TestApp; key: string; env: string }, suffix = '') => {
  const res = await ctx.t.request({
    method: 'POST',
    url: '/v1/keys',
    key: ctx.key,
    body: { name: 'Matrix target', env: ctx.env, scopes: ['keys:write'] },
  });
  expect(res.statusCode, res.body).toBe(201);
  return `/v1/keys/${json(res).data.id}${suffix}`;
};

/** An export asked for with `ctx.key`; `ready`: written by the worker's run first. */
const exportUrl = async (ctx: { t: TestApp; key: string }, suffix = '', ready = false) => {
  const res = await ctx.t.request({ method: 'POST', url: '/v1/exports', key: ctx.key });
  expect(res.statusCode, res.body).toBe(202);
  const id = json(res).data.id as string;
  if (ready) await ctx.t.services.exports.runDue(ctx.t.services.uow.as(systemActor('scheduler:exports')), { only: id });
  return `/v1/exports/${id}${suffix}`;
};

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
  {
    method: 'POST',
    path: '/v1/webhooks',
    scope: 'webhooks:write',
    success: 201,
    prepare: async () => ({ url: '/v1/webhooks', body: { url: HOOK_URL, events: ['resource.created'], label: 'M' } }),
  },
  {
    method: 'GET',
    path: '/v1/webhooks',
    scope: 'webhooks:read',
    success: 200,
    prepare: async () => ({ url: '/v1/webhooks' }),
  },
  {
    method: 'GET',
    path: '/v1/webhooks/:id',
    scope: 'webhooks:read',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await webhookUrl(ctx) }),
  },
  {
    method: 'DELETE',
    path: '/v1/webhooks/:id',
    scope: 'webhooks:write',
    success: 204,
    byId: true,
    prepare: async (ctx) => ({ url: await webhookUrl(ctx) }),
  },
  {
    method: 'GET',
    path: '/v1/webhooks/:id/deliveries',
    scope: 'webhooks:read',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await webhookUrl(ctx, '/deliveries') }),
  },
  {
    method: 'GET',
    path: '/v1/webhooks/:id/deliveries/:delivery_id',
    scope: 'webhooks:read',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await deliveryUrl(ctx) }),
  },
  {
    method: 'POST',
    path: '/v1/webhooks/:id/deliveries/:delivery_id/retry',
    scope: 'webhooks:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await deliveryUrl(ctx, '/retry') }),
  },
  {
    method: 'PATCH',
    path: '/v1/webhooks/:id',
    scope: 'webhooks:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await webhookUrl(ctx), body: { label: 'Patched', events: ['resource.deleted'] } }),
  },
  {
    method: 'POST',
    path: '/v1/webhooks/:id/disable',
    scope: 'webhooks:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await webhookUrl(ctx, '/disable') }),
  },
  {
    method: 'POST',
    path: '/v1/webhooks/:id/enable',
    scope: 'webhooks:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => {
      const url = await webhookUrl(ctx);
      expect((await ctx.t.request({ method: 'POST', url: `${url}/disable`, key: ctx.key })).statusCode).toBe(200);
      return { url: `${url}/enable` };
    },
  },
  {
    method: 'POST',
    path: '/v1/webhooks/:id/rotate-secret',
    scope: 'webhooks:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await webhookUrl(ctx, '/rotate-secret'), body: { expire_old_in_s: 60 } }),
  },
  {
    method: 'POST',
    path: '/v1/webhooks/:id/test',
    scope: 'webhooks:write',
    success: 202,
    byId: true,
    prepare: async (ctx) => ({ url: await webhookUrl(ctx, '/test') }),
  },
  {
    method: 'POST',
    path: '/v1/webhooks/:id/deliveries/retry',
    scope: 'webhooks:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({
      url: await webhookUrl(ctx, '/deliveries/retry'),
      body: { status: 'failed', since: '2026-01-01T00:00:00.000Z' },
    }),
  },
  {
    method: 'GET',
    path: '/v1/deliveries',
    scope: 'webhooks:read',
    success: 200,
    prepare: async () => ({ url: '/v1/deliveries?status=pending&limit=5' }),
  },
  {
    method: 'GET',
    path: '/v1/deliveries/summary',
    scope: 'webhooks:read',
    success: 200,
    prepare: async () => ({ url: '/v1/deliveries/summary?window=7d' }),
  },
  {
    method: 'GET',
    path: '/v1/keys',
    scope: 'keys:read',
    success: 200,
    prepare: async () => ({ url: '/v1/keys' }),
  },
  {
    method: 'POST',
    path: '/v1/keys',
    scope: 'keys:write',
    success: 201,
    prepare: async () => ({ url: '/v1/keys', body: { name: 'Matrix', env: 'live' } }),
  },
  {
    method: 'GET',
    path: '/v1/keys/:id',
    scope: 'keys:read',
    success: 200,
    byId: true,
    envCheck: 'test-only',
    prepare: async (ctx) => ({ url: await keyUrl(ctx) }),
    prepareOwn: async (ctx) => ({ url: await keyUrl({ ...ctx, key: ctx.ownKey }) }),
  },
  {
    method: 'DELETE',
    path: '/v1/keys/:id',
    scope: 'keys:write',
    success: 204,
    byId: true,
    envCheck: 'test-only',
    prepare: async (ctx) => ({ url: await keyUrl(ctx) }),
    prepareOwn: async (ctx) => ({ url: await keyUrl({ ...ctx, key: ctx.ownKey }) }),
  },
  {
    method: 'POST',
    path: '/v1/keys/:id/roll',
    scope: 'keys:write',
    success: 201,
    byId: true,
    envCheck: 'test-only',
    prepare: async (ctx) => ({ url: await keyUrl(ctx, '/roll'), body: { expire_old_in_s: 60 } }),
    prepareOwn: async (ctx) => ({ url: await keyUrl({ ...ctx, key: ctx.ownKey }, '/roll'), body: {} }),
  },
  {
    method: 'GET',
    path: '/v1/events',
    scope: 'events:read',
    success: 200,
    prepare: async () => ({ url: '/v1/events' }),
  },
  {
    method: 'GET',
    path: '/v1/events/:id',
    scope: 'events:read',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await eventUrl(ctx) }),
  },
  {
    method: 'GET',
    path: '/v1/usage',
    scope: 'usage:read',
    success: 200,
    prepare: async () => ({ url: '/v1/usage?granularity=minute' }),
  },
  {
    method: 'GET',
    path: '/v1/requests',
    scope: 'requests:read',
    success: 200,
    prepare: async () => ({ url: '/v1/requests?status=4xx' }),
  },
  {
    method: 'GET',
    path: '/v1/billing/subscription',
    scope: 'billing:read',
    success: 200,
    prepare: async () => ({ url: '/v1/billing/subscription' }),
  },
  {
    method: 'GET',
    path: '/v1/billing/invoices',
    scope: 'billing:read',
    success: 200,
    prepare: async () => ({ url: '/v1/billing/invoices' }),
  },
  {
    method: 'GET',
    path: '/v1/audit-log',
    scope: 'audit:read',
    success: 200,
    prepare: async () => ({ url: '/v1/audit-log?action=resource.' }),
  },
  {
    method: 'POST',
    path: '/v1/exports',
    scope: 'exports:write',
    success: 202,
    prepare: async () => ({ url: '/v1/exports' }),
  },
  {
    method: 'GET',
    path: '/v1/exports',
    scope: 'exports:write',
    success: 200,
    prepare: async () => ({ url: '/v1/exports' }),
  },
  {
    method: 'GET',
    path: '/v1/exports/:id',
    scope: 'exports:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await exportUrl(ctx) }),
  },
  {
    method: 'GET',
    path: '/v1/exports/:id/download',
    scope: 'exports:write',
    success: 200,
    byId: true,
    prepare: async (ctx) => ({ url: await exportUrl(ctx, '/download', true) }),
  },
  {
    method: 'DELETE',
    path: '/v1/workspace',
    scope: 'workspace:write',
    success: 202,
    prepare: async () => ({ url: '/v1/workspace', body: { confirm: 'Test workspace' } }),
  },
];

describeAuthMatrix(() => startTestApp(), ROUTES);

describe('auth matrix coverage', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('covers every registered /v1 route (add new routes to ROUTES)', () => {
    const covered = ROUTES.map((r) => `${r.method} ${r.path}`).sort();
    expect(covered).toEqual(registeredRoutes(t).filter((r) => !r.startsWith('OPTIONS ')));
  });
});
