import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Env, Role } from '../../src/db/types.js';
import { asCli, json, newWorkspace, type TestApp, type TestWorkspace } from './app.js';
import { expectError, expectRateLimitHeaders } from './expect.js';
import { expectNoChange } from './snapshot.js';

/** The scope table of docs/api.md#keys-scopes-and-roles, written out again here (not imported from src) so that a wrong table in src fails a test. */
export const ROLE_SCOPES: Record<string, readonly Role[]> = {
  'users:read': ['admin', 'member', 'viewer'],
  'users:write': ['admin', 'member', 'viewer'],
  'resources:read': ['admin', 'member', 'viewer'],
  'resources:write': ['admin', 'member'],
  'events:read': ['admin', 'member', 'viewer'],
  'webhooks:read': ['admin'],
  'webhooks:write': ['admin'],
  // docs/api.md#keys-scopes-and-roles: every role manages keys; a non-admin only their own (see prepareOwn).
  'keys:read': ['admin', 'member', 'viewer'],
  'keys:write': ['admin', 'member', 'viewer'],
  // docs/usage.md: usage and the failed-request log (members: their own keys' requests).
  'usage:read': ['admin', 'member'],
  'requests:read': ['admin', 'member'],
  // docs/billing.md#http: plans and invoices, admins only.
  'billing:read': ['admin'],
  'audit:read': ['admin'],
  // docs/data-lifecycle.md#export: archives of the whole workspace, admins only.
  'exports:write': ['admin'],
  'workspace:write': ['admin'],
};
const ALL_SCOPES = Object.keys(ROLE_SCOPES);

export interface MatrixContext {
  t: TestApp;
  ws: TestWorkspace;
  env: Env;
  /** The workspace admin's key of `env`, for setting up what the request needs. */
  key: string;
}

/** One route of the API, as the auth matrix exercises it. */
export interface RouteCase {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path as registered, e.g. `/v1/resources/:id`. */
  path: string;
  scope: string;
  /** Sets up a valid request in ws+env (e.g. creates the resource it addresses). */
  prepare(ctx: MatrixContext): Promise<{ url: string; body?: unknown }>;
  /** Status of a permitted request. */
  success: number;
  /** The route addresses one object by id: another workspace's or environment's id is a 404. */
  byId?: boolean;
  /**
   * For objects that belong to a user (API keys): sets up the request on an object of `userId`, for the
   * role checks. Without it, the role checks use the admin's object from `prepare`.
   */
  prepareOwn?(ctx: MatrixContext & { userId: string; ownKey: string }): Promise<{ url: string; body?: unknown }>;
  /**
   * Workspace-level objects whose environments are nested (API keys: a live key sees test keys, a test
   * key only test keys): the other-environment check runs from the test side only.
   */
  envCheck?: 'test-only';
}

function randomBase62(n: number): string {
  const chars = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  return [...randomBytes(n)].map((b) => chars[b % 62]).join('');
}

async function send(
  t: TestApp,
  c: RouteCase,
  req: { url: string; body?: unknown },
  authorization: string | undefined,
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = {};
  if (authorization !== undefined) headers.authorization = authorization;
  return t.request({ method: c.method, url: req.url, body: req.body, headers });
}

/** A request that must be refused with `status`/`code` and change nothing. */
async function refused(
  t: TestApp,
  c: RouteCase,
  req: { url: string; body?: unknown },
  authorization: string | undefined,
  status: number,
  code: string,
): Promise<LightMyRequestResponse> {
  const res = await expectNoChange(t, () => send(t, c, req, authorization));
  expectError(res, status, code);
  return res;
}

/**
 * Several requests that must each be refused with `status`/`code`, and together change nothing: one
 * snapshot of the database before the first and one after the last (a snapshot reads every row of
 * every table, and this file's database grows with each test).
 */
async function allRefused(
  t: TestApp,
  c: RouteCase,
  req: { url: string; body?: unknown },
  authorizations: (string | undefined)[],
  status: number,
  code: string,
): Promise<void> {
  await expectNoChange(t, async () => {
    for (const authorization of authorizations) {
      const res = await send(t, c, req, authorization);
      expectError(res, status, code);
    }
  });
}

/**
 * The auth matrix of the issue on every route: missing, malformed, unknown, revoked key,
 * removed user, wrong scope, each role of docs/api.md#keys-scopes-and-roles, another workspace's and another environment's id.
 */
export function describeAuthMatrix(start: () => Promise<TestApp>, cases: RouteCase[], routesPerApp = 8): void {
  // A refusal's check reads every row of every table before and after (expectNoChange), and each test
  // adds workspaces: a fresh app and database every `routesPerApp` routes keeps those reads short.
  for (let first = 0; first < cases.length; first += routesPerApp) {
    const group = cases.slice(first, first + routesPerApp);
    describe(`routes ${first + 1}–${first + group.length} of ${cases.length}, on a database of their own`, () => {
      let t: TestApp | undefined;
      beforeAll(async () => {
        t = await start();
      });
      afterAll(() => t?.close());
      describeRoutes(() => t as TestApp, group);
    });
  }
}

function describeRoutes(getT: () => TestApp, cases: RouteCase[]): void {
  for (const c of cases) {
    describe(`${c.method} ${c.path} (${c.scope})`, () => {
      const setup = async () => {
        const t = getT();
        const ws = await newWorkspace(t);
        const req = await c.prepare({ t, ws, env: 'live', key: ws.live });
        return { t, ws, req };
      };

      it('no Authorization header: 401 missing_token', async () => {
        const { t, req } = await setup();
        await allRefused(t, c, req, [undefined, ''], 401, 'missing_token');
      });

      it('a header that is not "Bearer <key>": 401 invalid_token', async () => {
        const { t, ws, req } = await setup();
        const malformed = [
          `Basic ${Buffer.from(`${ws.live}:`).toString('base64')}`,
          'Bearer',
          `bearer ${ws.live}`,
          `Token ${ws.live}`,
          ws.live,
          `Bearer  ${ws.live}`,
          `Bearer ${ws.live} extra`,
          'Bearer svc_live_tooShort',
          `Bearer svc_prod_${randomBase62(43)}`,
          `Bearer ${ws.live.replace('svc_live_', 'svc_test_')}`,
        ];
        await allRefused(t, c, req, malformed, 401, 'invalid_token');
      });

      it('a well-formed key that does not exist: 401 invalid_token', async () => {
        const { t, req } = await setup();
        const unknown = [`Bearer svc_live_${randomBase62(43)}`, `Bearer svc_test_${randomBase62(43)}`];
        await allRefused(t, c, req, unknown, 401, 'invalid_token');
      });

      it('a revoked key: 401 expired_token', async () => {
        const { t, ws, req } = await setup();
        const k = await ws.key(ws.adminId, 'live');
        await t.services.keyRegistry.revoke(asCli(t.services), k.id);
        await refused(t, c, req, `Bearer ${k.key}`, 401, 'expired_token');
      });

      it("a removed user's key: 401 expired_token (docs/api.md#keys-scopes-and-roles)", async () => {
        const { t, ws, req } = await setup();
        const m = await ws.member('admin');
        await t.services.users.remove(asCli(t.services), m.userId);
        await allRefused(t, c, req, [`Bearer ${m.live}`, `Bearer ${m.test}`], 401, 'expired_token');
      });

      it(`a key without ${c.scope}: 403 insufficient_scope, with rate-limit headers`, async () => {
        const { t, ws, req } = await setup();
        const k = await ws.key(
          ws.adminId,
          'live',
          ALL_SCOPES.filter((s) => s !== c.scope),
        );
        const res = await refused(t, c, req, `Bearer ${k.key}`, 403, 'insufficient_scope');
        expectRateLimitHeaders(res);
      });

      it(`a key with only ${c.scope}: ${c.success}`, async () => {
        const { t, ws, req } = await setup();
        const k = await ws.key(ws.adminId, 'live', [c.scope]);
        const res = await send(t, c, req, `Bearer ${k.key}`);
        expect(res.statusCode, res.body).toBe(c.success);
        expectRateLimitHeaders(res);
      });

      for (const role of ['admin', 'member', 'viewer'] as const) {
        const allowed = ROLE_SCOPES[c.scope]?.includes(role) ?? false;
        it(`${role}: ${allowed ? c.success : '403 insufficient_scope'} (docs/api.md#keys-scopes-and-roles)`, async () => {
          const { t, ws, req } = await setup();
          const m = await ws.member(role);
          const own = c.prepareOwn
            ? await c.prepareOwn({ t, ws, env: 'live', key: ws.live, userId: m.userId, ownKey: m.live })
            : req;
          if (allowed) {
            const res = await send(t, c, own, `Bearer ${m.live}`);
            expect(res.statusCode, res.body).toBe(c.success);
            expectRateLimitHeaders(res);
          } else {
            await refused(t, c, own, `Bearer ${m.live}`, 403, 'insufficient_scope');
          }
        });
      }

      if (c.byId) {
        it("another workspace's id: 404 not_found", async () => {
          const t = getT();
          const mine = await newWorkspace(t);
          const other = await newWorkspace(t);
          const req = await c.prepare({ t, ws: other, env: 'live', key: other.live });
          const res = await refused(t, c, req, `Bearer ${mine.live}`, 404, 'not_found');
          expectRateLimitHeaders(res);
        });

        it("another environment's id: 404 not_found (docs/api.md#environments)", async () => {
          const t = getT();
          const ws = await newWorkspace(t);
          const live = await c.prepare({ t, ws, env: 'live', key: ws.live });
          await refused(t, c, live, `Bearer ${ws.test}`, 404, 'not_found');
          if (c.envCheck === 'test-only') return;
          const test = await c.prepare({ t, ws, env: 'test', key: ws.test });
          await refused(t, c, test, `Bearer ${ws.live}`, 404, 'not_found');
        });
      }
    });
  }
}

/** Every (method, path) the app registered under /v1, HEAD aside. */
export function registeredRoutes(t: TestApp): string[] {
  const out: string[] = [];
  for (const [path, methods] of t.app.v1Routes) {
    for (const m of methods) if (m !== 'HEAD') out.push(`${m} ${path}`);
  }
  return out.sort();
}

/** Creates a resource through the API and returns its id. */
export async function createResource(t: TestApp, key: string, body: unknown = { name: 'Matrix', type: 'standard' }) {
  const res = await t.request({ method: 'POST', url: '/v1/resources', key, body });
  expect(res.statusCode, res.body).toBe(201);
  return json(res).data.id as string;
}
