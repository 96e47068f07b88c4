import cookie from '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ConsoleSessionsTable, Env } from '../../db/types.js';
import { AppError, fieldError } from '../../kernel/errors.js';
import type { ConsoleAuthService } from './console-auth.service.js';
import { sessionEndedError } from './session-check.js';

export const SESSION_COOKIE = 'wsvc_session';
/** Header naming the workspace a console API call acts in (a person may belong to several). */
export const WORKSPACE_HEADER = 'x-workspace-id';
/** Header naming the environment (the live/test switch) of a console API call. */
export const ENV_HEADER = 'x-env';

/** How a console API route authenticates: none, a session, or a session acting in a workspace. */
export type ConsoleAuthMode = 'public' | 'session' | 'actor';

declare module 'fastify' {
  interface FastifyContextConfig {
    console?: ConsoleAuthMode;
    /** Reachable by a session that must first add a second factor (docs/sign-in.md#the-second-factor-policy). */
    enrol?: boolean;
    /**
     * A GET the browser reaches by a plain navigation (the return from Stripe's Checkout), which cannot send
     * X-Workspace-Id: the workspace comes from this query parameter instead, with the same membership check.
     */
    workspaceQuery?: string;
  }
  interface FastifyRequest {
    consoleSession: { session: ConsoleSessionsTable; csrfToken: string } | null;
  }
}

const enrolFirst = () =>
  new AppError(
    403,
    'second_factor_required',
    'A workspace of yours requires a second factor: add an authenticator app or a passkey on the two-factor page first.',
  );

const csrfFailed = (why: string) => new AppError(403, 'csrf_failed', `The request was refused as cross-site: ${why}.`);

/**
 * docs/console.md: the console API authenticates with the session cookie only (never an API key), and /v1 never
 * with a cookie (auth.ts reads only Authorization). Every non-GET console request needs a
 * same-origin Origin and, once signed in, the session's X-CSRF-Token, else 403 csrf_failed.
 */
export async function installConsoleSession(
  app: FastifyInstance,
  deps: { consoleAuth: ConsoleAuthService; publicUrl: string; secureCookie: boolean; cookieMaxAgeS: number },
): Promise<void> {
  await app.register(cookie);
  app.decorateRequest('consoleSession', null);
  const publicOrigin = new URL(deps.publicUrl).origin;

  // Callback style (docs/performance.md#callback-style-hooks): a /v1 request passes both hooks with one check each, no promise.
  app.addHook('onRequest', (request, _reply, done) => {
    const mode = request.routeOptions.config?.console;
    if (!mode) return done();
    authenticate(request, mode).then(() => done(), done);
  });

  const authenticate = async (request: FastifyRequest, mode: ConsoleAuthMode): Promise<void> => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const origin = request.headers.origin;
      if (!origin) throw csrfFailed('no Origin header');
      if (origin !== publicOrigin && origin !== `${request.protocol}://${request.host}`) {
        throw csrfFailed(`Origin ${origin} is not this console`);
      }
    }
    if (mode === 'public') return;
    const open = await deps.consoleAuth.sessionOf(request.cookies[SESSION_COOKIE]);
    if (!open) throw sessionEndedError();
    if (request.method !== 'GET' && request.method !== 'HEAD' && request.headers['x-csrf-token'] !== open.csrfToken) {
      throw csrfFailed('missing or wrong X-CSRF-Token');
    }
    request.consoleSession = open;
    if (open.session.stage === 'enrol' && !request.routeOptions.config?.enrol) throw enrolFirst();
    if (mode === 'session') return;
    const fromQuery = request.method === 'GET' ? request.routeOptions.config?.workspaceQuery : undefined;
    const ws =
      request.headers[WORKSPACE_HEADER] ??
      (fromQuery ? (request.query as Record<string, unknown> | undefined)?.[fromQuery] : undefined);
    if (typeof ws !== 'string' || !/^ws_[0-9A-Za-z]{1,64}$/.test(ws)) {
      throw fieldError('X-Workspace-Id', 'required', 'Send the header X-Workspace-Id with a ws_… id.');
    }
    const env = request.headers[ENV_HEADER] ?? 'live';
    if (env !== 'live' && env !== 'test') throw fieldError('X-Env', 'invalid_value', 'X-Env must be live or test.');
    request.principal = await deps.consoleAuth.principalFor(open.session, ws, env as Env);
  };

  // Security headers (docs/console.md#headers-and-what-the-browser-loads) on every console page and API answer: no inline script, no framing, no sniffing.
  app.addHook('onSend', (request, reply, payload, done) => {
    const path = request.url;
    if (path !== '/' && path !== '/console' && !path.startsWith('/console/')) return done(null, payload);
    reply.header(
      'content-security-policy',
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; " +
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'same-origin');
    reply.header('x-frame-options', 'DENY');
    // Pages (the set-password page's URL carries its token) and API answers (tokens, personal data) are never stored.
    if (!path.startsWith('/console/assets/')) reply.header('cache-control', 'no-store');
    done(null, payload);
  });

  app.decorate('consoleCookie', {
    set(reply: FastifyReply, token: string) {
      reply.setCookie(SESSION_COOKIE, token, {
        httpOnly: true,
        sameSite: 'lax',
        secure: deps.secureCookie,
        path: '/',
        maxAge: deps.cookieMaxAgeS,
      });
    },
    clear(reply: FastifyReply) {
      reply.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', secure: deps.secureCookie, path: '/' });
    },
  });
}

declare module 'fastify' {
  interface FastifyInstance {
    consoleCookie: { set(reply: FastifyReply, token: string): void; clear(reply: FastifyReply): void };
  }
}

/** The request's session (routes with console: 'session' or 'actor' always have one). */
export function sessionOf(request: FastifyRequest) {
  if (!request.consoleSession) throw sessionEndedError();
  return request.consoleSession;
}
