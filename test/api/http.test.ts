import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';
import { expectError, expectRateLimitHeaders, expectValidation } from '../helpers/expect.js';
import { expectNoChange } from '../helpers/snapshot.js';

// Backends: both — refused bodies must write nothing, and the rate-limit counters are Redis-backed in the postgres project
// Tier: quick

let t: TestApp;
let ws: TestWorkspace;
let resId: string;
beforeAll(async () => {
  t = await startTestApp();
  ws = await newWorkspace(t);
  resId = await createResource(t, ws.live);
});
afterAll(() => t.close());

describe('bodies (docs/api.md#errors): 413, 415, invalid_json, nothing written', () => {
  const writes = () => [
    { method: 'POST' as const, url: '/v1/resources' },
    { method: 'PUT' as const, url: `/v1/resources/${resId}` },
    { method: 'PATCH' as const, url: '/v1/users/me' },
  ];

  it('a body over 1 MiB is 413 payload_too_large', async () => {
    const body = JSON.stringify({ name: 'a', metadata: { a: 'x'.repeat(1024 * 1024) } });
    for (const w of writes()) {
      const res = await expectNoChange(t, () =>
        t.request({ ...w, key: ws.live, body, headers: { 'content-type': 'application/json' } }),
      );
      expectError(res, 413, 'payload_too_large');
      expectRateLimitHeaders(res);
    }
  });

  it('a body just under 1 MiB is read (and then validated)', async () => {
    const pad = 1024 * 1024 - 200;
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: `{"name":"a","type":"standard","metadata":{"a":"${'x'.repeat(pad)}"}}`,
      headers: { 'content-type': 'application/json' },
    });
    // Parsed fine; refused by the metadata rules (value > 500, docs/api.md#resources), not by size.
    expectError(res, 400, 'validation_error');
  });

  for (const type of [
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/xml',
    'application/vnd.api+json',
  ]) {
    it(`Content-Type ${type} is 415 unsupported_media_type`, async () => {
      for (const w of writes()) {
        const res = await expectNoChange(t, () =>
          t.request({ ...w, key: ws.live, body: '{"name":"a","type":"standard"}', headers: { 'content-type': type } }),
        );
        expectError(res, 415, 'unsupported_media_type');
      }
    });
  }

  it('a body without Content-Type is 415', async () => {
    const res = await expectNoChange(t, () =>
      t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: '{"name":"a","type":"standard"}' }),
    );
    expectError(res, 415, 'unsupported_media_type');
  });

  it('application/json with a charset is accepted', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: '{"name":"a","type":"standard"}',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(res.statusCode).toBe(201);
  });

  for (const raw of [
    '{',
    '{"name": "a",}',
    "{'name': 'a'}",
    'nul',
    '{"name":"a"}{"x":1}',
    '\u0000',
    '{"__proto__":{"x":1}}',
    '{"constructor":{"prototype":{"x":1}}}',
  ]) {
    it(`malformed JSON ${JSON.stringify(raw)} is 400 invalid_json`, async () => {
      for (const w of writes()) {
        const res = await expectNoChange(t, () =>
          t.request({ ...w, key: ws.live, body: raw, headers: { 'content-type': 'application/json' } }),
        );
        expectError(res, 400, 'invalid_json');
      }
    });
  }

  it('a write without a body is a validation_error naming the body', async () => {
    const res = await expectNoChange(t, () => t.request({ method: 'POST', url: '/v1/resources', key: ws.live }));
    expectError(res, 400, 'validation_error');
  });
});

describe('input an endpoint does not take is refused, never ignored (docs/api.md#validation)', () => {
  const archive = () => ({ method: 'POST' as const, url: `/v1/resources/${resId}/archive` });
  const noBody = () => [
    archive(),
    { method: 'POST' as const, url: `/v1/resources/${resId}/unarchive` },
    { method: 'DELETE' as const, url: `/v1/resources/${resId}` },
  ];

  it('a JSON body on archive, unarchive and DELETE /resources/{id} is 400 naming the field, nothing changed', async () => {
    for (const w of noBody()) {
      const res = await expectNoChange(t, () => t.request({ ...w, key: ws.live, body: { x: 1 } }));
      const err = expectValidation(res, { field: 'x', issue: 'unknown_field' });
      expect(err.details, `${w.method} ${w.url}`).toHaveLength(1);
    }
    expect((await t.request({ method: 'GET', url: `/v1/resources/${resId}`, key: ws.live })).statusCode).toBe(200);
  });

  it('a body that is not an object there is 400 naming the body', async () => {
    for (const body of ['[]', 'null', '1', '"x"']) {
      const res = await expectNoChange(t, () =>
        t.request({ ...archive(), key: ws.live, body, headers: { 'content-type': 'application/json' } }),
      );
      expectValidation(res, { field: 'body', issue: 'invalid_type' });
    }
  });

  it('an Idempotency-Key does not store the refused request (docs/api.md#idempotency)', async () => {
    const req = { ...archive(), key: ws.live, body: { x: 1 }, headers: { 'idempotency-key': 'd5-body' } };
    expectValidation(await expectNoChange(t, () => t.request(req)), { field: 'x' });
    const ok = await t.request({ ...req, body: undefined });
    expect(ok.statusCode).toBe(200);
  });

  it('an empty body or {} is still fine there', async () => {
    const id = await createResource(t, ws.live);
    for (const body of [undefined, '', {}]) {
      const headers: Record<string, string> = body === '' ? { 'content-type': 'application/json' } : {};
      const arch = await t.request({ method: 'POST', url: `/v1/resources/${id}/archive`, key: ws.live, body, headers });
      expect(arch.statusCode, arch.body).toBe(200);
      const un = await t.request({ method: 'POST', url: `/v1/resources/${id}/unarchive`, key: ws.live, body, headers });
      expect(un.statusCode, un.body).toBe(200);
    }
    for (const body of [undefined, {}]) {
      const del = await t.request({
        method: 'DELETE',
        url: `/v1/resources/${await createResource(t, ws.live)}`,
        key: ws.live,
        body,
      });
      expect(del.statusCode, del.body).toBe(204);
    }
  });

  it('unknown query parameters on GET /users/me and GET /resources/{id} are 400, like GET /users?foo=1', async () => {
    const like = JSON.parse((await t.request({ method: 'GET', url: '/v1/users?foo=1', key: ws.live })).body).error;
    for (const url of ['/v1/users/me?foo=1', `/v1/resources/${resId}?foo=1`]) {
      const err = expectValidation(await t.request({ method: 'GET', url, key: ws.live }), {
        field: 'foo',
        issue: 'unknown_field',
      });
      expect({ message: err.message, details: err.details }).toEqual({ message: like.message, details: like.details });
    }
  });

  it('each unknown query parameter is one detail; a write with one changes nothing', async () => {
    const res = await expectNoChange(t, () =>
      t.request({ method: 'POST', url: `/v1/resources/${resId}/archive?foo=1&bar=2`, key: ws.live }),
    );
    const err = expectValidation(
      res,
      { field: 'foo', issue: 'unknown_field' },
      { field: 'bar', issue: 'unknown_field' },
    );
    expect(err.details).toHaveLength(2);
  });

  it('every authenticated route without a body or query schema refuses one (from the OpenAPI document)', async () => {
    const doc = JSON.parse((await t.request({ method: 'GET', url: '/v1/openapi.json' })).body);
    type Op = { requestBody?: unknown; parameters?: { in: string }[] };
    const checked: string[] = [];
    for (const [path, ops] of Object.entries<Record<string, Op>>(doc.paths)) {
      // Ids need not exist: the check runs before the route looks anything up.
      const url = path.replace(/\{[^}]+\}/g, 'x_0');
      for (const [m, op] of Object.entries(ops)) {
        const method = m.toUpperCase() as 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
        // With a body, send a valid one ({} suits PATCH /users/me) so that the body is not what fails.
        if (!op.parameters?.some((p) => p.in === 'query') && (!op.requestBody || path === '/v1/users/me')) {
          const body = op.requestBody ? {} : undefined;
          const res = await expectNoChange(t, () => t.request({ method, url: `${url}?foo=1`, key: ws.live, body }));
          expectValidation(res, { field: 'foo', issue: 'unknown_field' });
          checked.push(`${method} ${path} query`);
        }
        if (!op.requestBody && method !== 'GET') {
          const res = await expectNoChange(t, () => t.request({ method, url, key: ws.live, body: { x: 1 } }));
          expectValidation(res, { field: 'x', issue: 'unknown_field' });
          checked.push(`${method} ${path} body`);
        }
      }
    }
    // Routes registered by later modules are covered too, e.g. the delivery retry.
    const retry = 'POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry';
    expect(checked).toEqual(expect.arrayContaining([`${retry} query`, `${retry} body`, 'GET /v1/events/{id} query']));
  });

  it('public routes are left alone', async () => {
    for (const url of ['/healthz?foo=1', '/readyz?foo=1', '/v1/openapi.json?foo=1']) {
      expect((await t.request({ method: 'GET', url })).statusCode, url).toBe(200);
    }
  });
});

describe('routing (docs/api.md#errors): 405 with Allow, 404 for unknown routes', () => {
  const paths: [string, string[]][] = [
    ['/v1/users/me', ['GET', 'HEAD', 'PATCH']],
    ['/v1/users', ['GET', 'HEAD']],
    ['/v1/resources', ['GET', 'HEAD', 'POST']],
    ['/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R', ['DELETE', 'GET', 'HEAD', 'PUT']],
    ['/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R/archive', ['POST']],
    ['/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R/unarchive', ['POST']],
  ];
  for (const [path, allowed] of paths) {
    const others = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'].filter((m) => !allowed.includes(m));
    it(`${path}: ${others.join(', ')} are 405 with Allow: ${allowed.join(', ')}`, async () => {
      for (const method of others) {
        const res = await expectNoChange(t, () => t.request({ method: method as 'GET', url: path, key: ws.live }));
        expect(res.statusCode, `${method} ${path}`).toBe(405);
        expect(res.headers.allow).toBe(allowed.join(', '));
        if (method !== 'HEAD') expectError(res, 405, 'method_not_allowed');
      }
    });
  }

  it('/ redirects to the console (docs/console.md)', async () => {
    const res = await t.request({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/console/');
  });

  for (const url of [
    '/v1',
    '/v1/',
    '/v1/nope',
    '/v2/resources',
    '/v1/resources/x/y/z',
    '/v1/users/me/extra',
    '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R/delete',
  ]) {
    it(`${url} is 404 not_found with the error body, with or without a key`, async () => {
      for (const key of [ws.live, undefined]) {
        expectError(await t.request({ method: 'GET', url, key }), 404, 'not_found');
      }
    });
  }

  it('an id longer than the router allows is a 404, not a 500', async () => {
    const res = await t.request({ method: 'GET', url: `/v1/resources/res_${'A'.repeat(500)}`, key: ws.live });
    expectError(res, 404, 'not_found');
  });

  it('/healthz, /readyz, /docs and /v1/openapi.json answer without a key (docs/api.md#versioning)', async () => {
    expect(json(await t.request({ method: 'GET', url: '/healthz' }))).toEqual({ status: 'ok' });
    expect(json(await t.request({ method: 'GET', url: '/readyz' }))).toMatchObject({ status: 'ready', database: 'ok' });
    const docs = await t.request({ method: 'GET', url: '/docs' });
    expect(docs.statusCode).toBe(200);
    expect(docs.headers['content-type']).toMatch(/text\/html/);
    expect(docs.body).toMatch(/swagger-ui/i);
    const init = await t.request({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(init.statusCode).toBe(200);
    const doc = await t.request({ method: 'GET', url: '/v1/openapi.json' });
    expect(doc.statusCode).toBe(200);
    expect(json(doc).openapi).toBe('3.1.0');
  });
});

describe('X-Request-Id (docs/api.md#errors, #ids)', () => {
  it('is a new req_ id on every response, and the error body carries the same id', async () => {
    const a = await t.request({ method: 'GET', url: '/v1/users/me', key: ws.live });
    const b = await t.request({ method: 'GET', url: '/v1/users/me' });
    expect(a.headers['x-request-id']).toMatch(/^req_[0-9A-Z]{26}$/);
    expect(b.headers['x-request-id']).toMatch(/^req_[0-9A-Z]{26}$/);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
    expect(json(b).error.request_id).toBe(b.headers['x-request-id']);
    for (const url of ['/healthz', '/nope', '/docs']) {
      expect((await t.request({ method: 'GET', url })).headers['x-request-id']).toMatch(/^req_/);
    }
  });

  it('echoes a sane incoming id', async () => {
    for (const id of ['abc-123', 'trace.id:42_x', 'A'.repeat(128)]) {
      const res = await t.request({ method: 'GET', url: '/v1/nope', headers: { 'x-request-id': id } });
      expect(res.headers['x-request-id']).toBe(id);
      expect(json(res).error.request_id).toBe(id);
    }
  });

  it('replaces an insane one (too long, spaces, markup, non-ASCII, empty)', async () => {
    for (const id of ['A'.repeat(129), 'a b', '<script>', 'ré', '', 'a\tb', 'x;y']) {
      const res = await t.request({
        method: 'GET',
        url: '/v1/users/me',
        key: ws.live,
        headers: { 'x-request-id': id },
      });
      expect(res.headers['x-request-id']).toMatch(/^req_[0-9A-Z]{26}$/);
    }
  });
});

describe('rate limits (docs/api.md#rate-limits)', () => {
  it('every authenticated response carries X-RateLimit-*, errors included', async () => {
    const requests = [
      { method: 'GET' as const, url: '/v1/users/me' },
      { method: 'GET' as const, url: '/v1/resources?limit=0' },
      { method: 'GET' as const, url: '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R' },
      { method: 'POST' as const, url: '/v1/resources', body: { name: '' } },
      { method: 'POST' as const, url: '/v1/resources', body: '{', headers: { 'content-type': 'application/json' } },
      { method: 'PATCH' as const, url: '/v1/users/me', body: 'x', headers: { 'content-type': 'text/plain' } },
      { method: 'DELETE' as const, url: `/v1/resources/${resId}x` },
    ];
    let last = Number.POSITIVE_INFINITY;
    for (const r of requests) {
      const res = await t.request({ ...r, key: ws.live });
      expectRateLimitHeaders(res);
      expect(Number(res.headers['x-ratelimit-limit'])).toBe(6000);
      const remaining = Number(res.headers['x-ratelimit-remaining']);
      expect(remaining).toBeLessThan(last);
      last = remaining;
      expect(Number(res.headers['x-ratelimit-reset'])).toBeLessThanOrEqual(60);
    }
  });

  it('test keys have their own limit (1,500 by default)', async () => {
    const res = await t.request({ method: 'GET', url: '/v1/users/me', key: ws.test });
    expect(res.headers['x-ratelimit-limit']).toBe('1500');
  });

  it('unauthenticated responses (401, health) carry none', async () => {
    const res = await t.request({ method: 'GET', url: '/v1/users/me' });
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    expect((await t.request({ method: 'GET', url: '/healthz' })).headers['x-ratelimit-limit']).toBeUndefined();
  });
});

describe('rate limit exhaustion (docs/api.md#rate-limits, small limits through settings)', () => {
  let small: TestApp;
  let w: TestWorkspace;
  beforeAll(async () => {
    small = await startTestApp({ config: { RATE_LIMIT_LIVE: 3, RATE_LIMIT_TEST: 2, RATE_LIMIT_WINDOW_S: 3600 } });
    w = await newWorkspace(small);
  });
  afterAll(() => small.close());

  it('the request after the limit is 429 rate_limited with Retry-After; other keys are unaffected', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      const res = await small.request({ method: 'GET', url: '/v1/users/me', key: w.live });
      statuses.push(res.statusCode);
      expect(res.headers['x-ratelimit-remaining']).toBe(String(2 - i));
    }
    expect(statuses).toEqual([200, 200, 200]);
    const limited = await expectNoChange(small, () =>
      small.request({ method: 'POST', url: '/v1/resources', key: w.live, body: { name: 'a', type: 'standard' } }),
    );
    expectError(limited, 429, 'rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(3600);
    expect(limited.headers['x-ratelimit-limit']).toBe('3');
    expect(limited.headers['x-ratelimit-remaining']).toBe('0');
    expectRateLimitHeaders(limited);

    // The test key of the same user, and another user's key, have their own counters.
    const m = await w.member('member');
    expect((await small.request({ method: 'GET', url: '/v1/users/me', key: w.test })).statusCode).toBe(200);
    expect((await small.request({ method: 'GET', url: '/v1/users/me', key: w.test })).statusCode).toBe(200);
    expectError(await small.request({ method: 'GET', url: '/v1/users/me', key: w.test }), 429, 'rate_limited');
    expect((await small.request({ method: 'GET', url: '/v1/users/me', key: m.live })).statusCode).toBe(200);
  });
});

describe('URLs the router cannot take', () => {
  it('broken %-encoding in a path is a 404 with the error body, not a framework body', async () => {
    const res = await t.request({ method: 'GET', url: '/v1/resources/%E0%A4%A', key: ws.live });
    expectError(res, 404, 'not_found');
  });
});
