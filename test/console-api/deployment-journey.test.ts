// Backends: both — the journey of test/console/e2e.test.ts through a whole deployment as users run it, over HTTP: `wsvc serve` with its delivery worker, usage flush and console sessions, and Redis on PostgreSQL
// Tier: full — starts a `wsvc serve` child process with its delivery worker and waits on real deliveries

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli } from '../helpers/app.js';
import { PASSWORD } from '../helpers/console.js';
import { eventually, type Receiver, startReceiver } from '../helpers/receiver.js';
import { type Served, startServed } from '../helpers/served.js';

// What test/console/e2e.test.ts does in Chromium (on SQLite), as the console's own calls over HTTP
// against a real `wsvc serve` on this project's database: the storage rules of the journey (a key
// rolled and revoked, a webhook delivered, failed and retried, the usage flushed to the request log,
// a viewer's forced writes refused, a cross-origin write refused, sign-out ending the session) on
// SQLite and on PostgreSQL with Redis. The pages, their focus and redirects stay in the browser file.
const STEP = 120_000;

let served: Served;
let base: string;
let receiver: Receiver;
let ws: string;
let liveKey: string;
const failing = { on: false };

beforeAll(async () => {
  receiver = await startReceiver((r) =>
    failing.on && r.path === '/hook' ? { status: 500, body: 'receiver down' } : { status: 200, body: 'thanks' },
  );
  served = await startServed({ env: { USAGE_FLUSH_MS: '200' } });
  base = served.base;
}, STEP);

afterAll(async () => {
  await served?.close();
  await receiver?.close();
});

interface Answer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: { data: T; error?: { code: string } } & Record<string, unknown>;
}

/** A person in a browser, without the browser: the session cookie and CSRF token the console sends. */
class Person {
  cookie = '';
  csrf = '';
  constructor(private readonly origin: string) {}

  /** Sets the password from a single-use link (which signs the person in, as the page does). */
  async setPassword(link: string): Promise<Answer> {
    const token = new URL(link).searchParams.get('token') ?? '';
    const res = await this.call('POST', '/console/api/password/set', { token, password: PASSWORD });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res;
  }

  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    opts: { env?: 'live' | 'test'; headers?: Record<string, string> } = {},
  ): Promise<Answer<T>> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        origin: this.origin,
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...(this.csrf && method !== 'GET' ? { 'x-csrf-token': this.csrf } : {}),
        ...(ws ? { 'x-workspace-id': ws, 'x-env': opts.env ?? 'live' } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...opts.headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const set = res.headers.getSetCookie().find((c) => c.startsWith('wsvc_session='));
    if (set) this.cookie = set.split(';')[0] as string;
    const text = await res.text();
    const parsed = text ? JSON.parse(text) : {};
    const csrf = (parsed as { data?: { csrf_token?: unknown } }).data?.csrf_token;
    if (typeof csrf === 'string') this.csrf = csrf;
    return { status: res.status, headers: res.headers, body: parsed };
  }
}

/** A GET through /v1 with the workspace's live key (what the console wrote must be there). */
async function v1(url: string, key = liveKey): Promise<Response> {
  return fetch(`${base}/v1${url}`, { headers: { authorization: `Bearer ${key}` } });
}
async function v1List(url: string): Promise<{ id: string; status: string; name?: string }[]> {
  const res = await v1(url);
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { id: string; status: string }[] }).data;
}

let admin: Person;
let adminCookie = '';

describe('the console journey over HTTP against `wsvc serve` (test/console/e2e.test.ts in Chromium)', () => {
  it(
    "admin's link → password → a key from the console → a real /v1 call → roll with no overlap → revoke → 401 expired_token",
    async () => {
      const out = await served.services.workspaces.create(asCli(served.services), {
        name: 'Acme',
        adminEmail: 'admin@acme.test',
        adminName: 'Ada Admin',
      });
      liveKey = out.keys.live.key;
      admin = new Person(base);
      const set = await admin.setPassword(out.set_password_url);
      expect(set.body.data).toMatchObject({ email: 'admin@acme.test' });
      // The session cookie: out of scripts' reach, not sent by other sites' posts.
      const cookie = set.headers.getSetCookie().find((c) => c.startsWith('wsvc_session=')) ?? '';
      expect(cookie).toMatch(/;\s*HttpOnly/i);
      expect(cookie).toMatch(/;\s*SameSite=Lax/i);
      ws = out.workspace.id;
      adminCookie = admin.cookie;
      const session = await admin.call<{ email: string }>('GET', '/console/api/session');
      expect(session.body.data.email).toBe('admin@acme.test');

      const made = await admin.call<{ id: string; key: string; scopes: string[] }>('POST', '/console/api/v1/keys', {
        name: 'Deploy bot',
        env: 'live',
        scopes: ['resources:read', 'resources:write'],
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      const { id, key } = made.body.data;
      expect(key).toMatch(/^svc_live_[0-9A-Za-z]{32,}$/);
      expect((await v1('/resources', key)).status).toBe(200);
      // Shown once: the list has no plaintext.
      const listed = await admin.call('GET', '/console/api/v1/keys');
      expect(JSON.stringify(listed.body)).not.toContain(key);
      // Rolled with no overlap: the successor works, the old key stops at once.
      const rolled = await admin.call<{ key: string }>('POST', `/console/api/v1/keys/${id}/roll`, {
        expire_old_in_s: 0,
      });
      expect(rolled.status, JSON.stringify(rolled.body)).toBe(201);
      const successor = rolled.body.data.key;
      expect(successor).toMatch(/^svc_live_/);
      expect(successor).not.toBe(key);
      expect((await v1('/resources', key)).status).toBe(401);
      expect((await v1('/resources', successor)).status).toBe(200);
      const successorId = ((
        await admin.call<{ id: string; name: string; status: string }[]>('GET', '/console/api/v1/keys')
      ).body.data.find((k) => k.name === 'Deploy bot' && k.status === 'active')?.id ?? '') as string;
      const revoked = await admin.call('DELETE', `/console/api/v1/keys/${successorId}`);
      expect(revoked.status).toBe(204);
      const after = await v1('/resources', successor);
      expect(after.status).toBe(401);
      expect(((await after.json()) as { error: { code: string } }).error.code).toBe('expired_token');
    },
    STEP,
  );

  it(
    'webhook to a loopback receiver → secret once → resource from the console → delivered → a failure retried → test event → rotated secret',
    async () => {
      const hook = await admin.call<{ id: string; secret: string }>('POST', '/console/api/v1/webhooks', {
        url: receiver.url('/hook'),
        events: ['*'],
        label: 'Billing sync',
      });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);
      const { id: webhookId, secret } = hook.body.data;
      expect(secret).toMatch(/^whsec_/);
      expect(JSON.stringify((await admin.call('GET', '/console/api/v1/webhooks')).body)).not.toContain(secret);

      const first = await admin.call('POST', '/console/api/v1/resources', {
        name: 'Invoice 1',
        type: 'standard',
        metadata: { plan: 'pro', region: 'eu' },
      });
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      await receiver.until((r) => r.some((x) => x.path === '/hook'));
      // Newest first, as the list shows it.
      expect((await v1List('/resources'))[0]?.name).toBe('Invoice 1');

      failing.on = true;
      expect(
        (await admin.call('POST', '/console/api/v1/resources', { name: 'Invoice 2', type: 'standard' })).status,
      ).toBe(201);
      const failed = await eventually(async () => {
        const d = await v1List(`/webhooks/${webhookId}/deliveries`);
        return d.find((x) => x.status === 'failed');
      }, 20_000);
      failing.on = false;
      const summary = await admin.call<Record<string, unknown>>('GET', '/console/api/v1/deliveries/summary');
      expect(summary.status, JSON.stringify(summary.body)).toBe(200);

      const retry = await admin.call('POST', `/console/api/v1/webhooks/${webhookId}/deliveries/${failed.id}/retry`);
      expect(retry.status, JSON.stringify(retry.body)).toBeLessThan(300);
      await eventually(async () => {
        const d = await v1List(`/webhooks/${webhookId}/deliveries`);
        return d.length === 2 && d.every((x) => x.status === 'succeeded');
      }, 20_000);
      const stillFailed = await admin.call<unknown[]>(
        'GET',
        `/console/api/v1/webhooks/${webhookId}/deliveries?status=failed`,
      );
      expect(stillFailed.body.data).toEqual([]);

      const test = await admin.call<{ id: string }>('POST', `/console/api/v1/webhooks/${webhookId}/test`);
      expect(test.status, JSON.stringify(test.body)).toBeLessThan(300);
      expect(test.body.data.id).toMatch(/^dlv_/);
      await receiver.until((r) => r.some((x) => x.path === '/hook' && x.body.includes('webhook.test')));
      const rotated = await admin.call<{ secret: string }>(
        'POST',
        `/console/api/v1/webhooks/${webhookId}/rotate-secret`,
        {},
      );
      expect(rotated.status, JSON.stringify(rotated.body)).toBeLessThan(300);
      expect(rotated.body.data.secret).toMatch(/^whsec_/);
      expect(rotated.body.data.secret).not.toBe(secret);
    },
    STEP,
  );

  it(
    "the profile's timezone is kept (the pages show times in it)",
    async () => {
      const saved = await admin.call<{ timezone: string }>('PATCH', '/console/api/v1/users/me', {
        timezone: 'Asia/Tokyo',
      });
      expect(saved.status, JSON.stringify(saved.body)).toBe(200);
      expect((await admin.call<{ timezone: string }>('GET', '/console/api/v1/users/me')).body.data.timezone).toBe(
        'Asia/Tokyo',
      );
    },
    STEP,
  );

  it(
    'the live/test switch: two separate worlds',
    async () => {
      const made = await admin.call(
        'POST',
        '/console/api/v1/resources',
        { name: 'Sandbox thing', type: 'standard' },
        {
          env: 'test',
        },
      );
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      const names = async (env: 'live' | 'test') =>
        (await admin.call<{ name: string }[]>('GET', '/console/api/v1/resources', undefined, { env })).body.data.map(
          (r) => r.name,
        );
      expect(await names('test')).toEqual(['Sandbox thing']);
      expect(await names('live')).not.toContain('Sandbox thing');
      expect(await names('live')).toContain('Invoice 1');
    },
    STEP,
  );

  it(
    "traffic → the server's usage flush → a failed call's request id finds its log entry; usage by route",
    async () => {
      for (let i = 0; i < 3; i++) expect((await v1('/resources')).status).toBe(200);
      const failed = await v1('/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R');
      expect(failed.status).toBe(404);
      const requestId = failed.headers.get('x-request-id') as string;
      // Written by the server's meter within USAGE_FLUSH_MS (200 ms here), read through the console.
      const found = await eventually(async () => {
        const r = await admin.call<{ request_id: string; error_code: string }[]>(
          'GET',
          `/console/api/v1/requests?request_id=${encodeURIComponent(requestId)}`,
        );
        return r.status === 200 && r.body.data.length === 1 && r.body.data;
      }, 10_000);
      expect(found[0]).toMatchObject({
        request_id: requestId,
        status: 404,
        route: '/v1/resources/:id',
        error_code: 'not_found',
      });
      // The Usage page's requests by route: one series per route, the failed call's among them.
      await eventually(async () => {
        const r = await admin.call<{ series: { group: string | null }[] }>(
          'GET',
          '/console/api/v1/usage?group_by=route',
        );
        return r.status === 200 && r.body.data.series.some((x) => x.group === 'GET /v1/resources/:id');
      }, 10_000);
    },
    STEP,
  );

  it(
    'invite a viewer → they set a password and read → the server answers 403 to the writes their pages hide',
    async () => {
      const invited = await admin.call<{ invite_url: string }>('POST', '/console/api/members', {
        email: 'viewer@acme.test',
        role: 'viewer',
      });
      expect(invited.status, JSON.stringify(invited.body)).toBe(201);
      const link = invited.body.data.invite_url;
      expect(link).toMatch(new RegExp(`^${base}/console/set-password\\?token=`));
      const viewer = new Person(base);
      await viewer.setPassword(link);
      const resources = await viewer.call<{ name: string }[]>('GET', '/console/api/v1/resources');
      expect(resources.status).toBe(200);
      expect(resources.body.data.map((r) => r.name)).toContain('Invoice 1');
      const forced = [
        await viewer.call('POST', '/console/api/v1/resources', { name: 'nope', type: 'standard' }),
        await viewer.call('POST', '/console/api/members', { email: 'x@acme.test', role: 'admin' }),
        await viewer.call('POST', '/console/api/v1/webhooks', { url: 'http://127.0.0.1:9/x', events: ['*'] }),
      ].map((r) => ({ status: r.status, code: r.body.error?.code }));
      expect(forced).toEqual([
        { status: 403, code: 'insufficient_scope' },
        { status: 403, code: 'insufficient_scope' },
        { status: 403, code: 'insufficient_scope' },
      ]);
    },
    STEP,
  );

  it(
    'a cross-origin POST carrying the session cookie is refused; a wrong method is a 405; sign-out ends the session',
    async () => {
      const wrong = await admin.call('PUT', '/console/api/session');
      expect(wrong.status).toBe(405);
      expect(wrong.headers.get('allow')).toBe('DELETE, GET, HEAD, POST');
      expect(wrong.body.error?.code).toBe('method_not_allowed');
      const before = (await v1List('/resources')).length;
      // The session's own cookie and CSRF token, from another origin.
      const forged = await admin.call(
        'POST',
        '/console/api/v1/resources',
        { name: 'forged', type: 'standard' },
        { headers: { origin: 'http://evil.example' } },
      );
      expect(forged.status).toBe(403);
      expect(forged.body.error?.code).toBe('csrf_failed');
      // A form post of another page: no CSRF token, a text body.
      const noCsrf = await fetch(`${base}/console/api/v1/resources`, {
        method: 'POST',
        headers: { cookie: adminCookie, origin: receiver.url('').replace(/\/$/, ''), 'content-type': 'text/plain' },
        body: JSON.stringify({ name: 'forged', type: 'standard' }),
      });
      expect(noCsrf.status).toBe(403);
      expect((await v1List('/resources')).length).toBe(before);

      const csrf = admin.csrf;
      const out = await admin.call('DELETE', '/console/api/session');
      expect(out.status).toBeLessThan(300);
      // An ended session: reads and writes alike answer 401 unauthenticated.
      const reuse = await fetch(`${base}/console/api/session`, { headers: { cookie: adminCookie } });
      expect(reuse.status).toBe(401);
      expect(((await reuse.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
      const write = await fetch(`${base}/console/api/v1/resources`, {
        method: 'POST',
        headers: {
          cookie: adminCookie,
          origin: base,
          'x-csrf-token': csrf,
          'x-workspace-id': ws,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ name: 'after sign-out', type: 'standard' }),
      });
      expect(write.status).toBe(401);
      expect(((await write.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
    },
    STEP,
  );
});
