import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { json, type TestApp } from './app.js';

export const ORIGIN = 'http://127.0.0.1:8080';
export const PASSWORD = 'correct horse battery';

/** The token of a single-use link printed by the service. */
export function linkToken(url: string): string {
  return new URL(url).searchParams.get('token') ?? '';
}

export interface ConsoleClient {
  cookie: string;
  csrf: string;
  session: {
    email: string;
    session_id: string;
    method?: string;
    stage?: string;
    memberships: { workspace_id: string; role: string }[];
  };
  call(opts: {
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
    url: string;
    body?: unknown;
    ws?: string;
    env?: 'live' | 'test';
    headers?: Record<string, string>;
  }): Promise<LightMyRequestResponse>;
}

/** The session cookie (name=value) set by a response. */
export function sessionCookie(res: LightMyRequestResponse): string {
  const set = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
  const c = set.find((s) => s.startsWith('wsvc_session='));
  expect(c).toBeDefined();
  return (c as string).split(';')[0] as string;
}

/** Sets a password from a link and signs in; returns a client that sends the cookie and CSRF token. */
export async function signInWithLink(t: TestApp, url: string, password = PASSWORD): Promise<ConsoleClient> {
  const set = await t.request({
    method: 'POST',
    url: '/console/api/password/set',
    body: { token: linkToken(url), password },
    headers: { origin: ORIGIN },
  });
  expect(set.statusCode, set.body).toBe(200);
  return signIn(t, json(set).data.email, password);
}

export async function signIn(t: TestApp, email: string, password = PASSWORD): Promise<ConsoleClient> {
  const res = await t.request({
    method: 'POST',
    url: '/console/api/session',
    body: { email, password },
    headers: { origin: ORIGIN },
  });
  expect(res.statusCode, res.body).toBe(201);
  const cookie = sessionCookie(res);
  const session = json(res).data;
  const csrf = session.csrf_token as string;
  return {
    cookie,
    csrf,
    session,
    call({ method, url, body, ws, env, headers }) {
      const h: Record<string, string> = {
        cookie,
        origin: ORIGIN,
        ...(method === 'GET' ? {} : { 'x-csrf-token': csrf }),
      };
      if (ws) h['x-workspace-id'] = ws;
      if (env) h['x-env'] = env;
      return t.request({ method, url, body, headers: { ...h, ...headers } });
    },
  };
}
