import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { totpCode } from '../../src/modules/mfa/totp.js';
import { asCli, json, type TestApp } from './app.js';
import { type ConsoleClient, ORIGIN, PASSWORD, sessionCookie, signInWithLink } from './console.js';

/** A clock a test moves by hand (the TOTP window, pending sign-ins). */
export function manualClock(start: number) {
  let now = start;
  return {
    now: () => now,
    set(ms: number) {
      now = ms;
    },
    advance(ms: number) {
      now += ms;
    },
  };
}

/** The first step of sign-in: the password. */
export function postPassword(t: TestApp, email: string, password = PASSWORD, ip?: string) {
  return t.request({
    method: 'POST',
    url: '/console/api/session',
    body: { email, password },
    headers: { origin: ORIGIN, ...(ip ? { 'x-forwarded-for': ip } : {}) },
  });
}

/** The second step: the pending token and one second factor. */
export function postSecondFactor(t: TestApp, body: Record<string, unknown>) {
  return t.request({ method: 'POST', url: '/console/api/session/second-factor', body, headers: { origin: ORIGIN } });
}

/** A client for a session opened by a 201 answer (second factor, passkey, SSO). */
export function clientOf(t: TestApp, res: LightMyRequestResponse): ConsoleClient {
  expect(res.statusCode, res.body).toBe(201);
  const cookie = sessionCookie(res);
  const session = json(res).data;
  return {
    cookie,
    csrf: session.csrf_token,
    session,
    call({ method, url, body, ws, env, headers }) {
      const h: Record<string, string> = {
        cookie,
        origin: ORIGIN,
        ...(method === 'GET' ? {} : { 'x-csrf-token': session.csrf_token }),
      };
      if (ws) h['x-workspace-id'] = ws;
      if (env) h['x-env'] = env;
      return t.request({ method, url, body, headers: { ...h, ...headers } });
    },
  };
}

/** A new workspace whose admin has signed in with a password; returns the admin's client and email. */
export async function adminOf(
  t: TestApp,
  name: string,
): Promise<{ ws: string; userId: string; email: string; client: ConsoleClient }> {
  const email = `${name.toLowerCase().replace(/\W/g, '')}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@example.test`;
  const out = await t.services.workspaces.create(asCli(t.services), { name, adminEmail: email });
  const client = await signInWithLink(t, out.set_password_url);
  return { ws: out.workspace.id, userId: out.user.id, email, client };
}

/** Turns TOTP on for a signed-in person at the clock's time; returns the secret and the recovery codes. */
export async function enrolTotp(client: ConsoleClient, now: number): Promise<{ secret: string; codes: string[] }> {
  const start = await client.call({ method: 'POST', url: '/console/api/two-factor/totp' });
  expect(start.statusCode, start.body).toBe(201);
  const secret = json(start).data.secret as string;
  const confirm = await client.call({
    method: 'POST',
    url: '/console/api/two-factor/totp/confirm',
    body: { code: totpCode(secret, now) },
  });
  expect(confirm.statusCode, confirm.body).toBe(200);
  return { secret, codes: json(confirm).data.recovery_codes };
}
