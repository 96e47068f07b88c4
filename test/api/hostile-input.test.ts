import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { rawRequest } from '../helpers/raw-http.js';

// Backends: sqlite — Node's HTTP parser, the body limits and the server timeouts on raw sockets: all decided before storage
// Tier: quick
// Hostile input never reaches a 500, costs no deep recursion,
// and every protocol-level error answers the error body. Raw sockets against the real app listening
// on loopback, so Node's HTTP parser and the server's timeouts are the real ones.
const HEADERS_TIMEOUT_MS = 1500;

let t: TestApp;
let port: number;
let ws: TestWorkspace;
beforeAll(async () => {
  t = await startTestApp({ config: { HTTP_HEADERS_TIMEOUT_MS: HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS: 3000 } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
  ws = await newWorkspace(t);
});
afterAll(async () => {
  await t.close();
});

const JSON_TYPE = { 'content-type': 'application/json' };
const nested = (depth: number, open = '[', close = ']') => open.repeat(depth) + close.repeat(depth);
/** A create body whose metadata nests objects so that the whole body is `depth` levels deep. */
const metadataNested = (depth: number) =>
  `{"name":"x","type":"standard","metadata":${'{"a":'.repeat(depth - 1)}"v"${'}'.repeat(depth - 1)}}`;

function expectD1(body: string, code: string) {
  const parsed = JSON.parse(body);
  expect(Object.keys(parsed)).toEqual(['error']);
  expect(parsed.error).toMatchObject({ code, message: expect.any(String), request_id: expect.stringMatching(/^req_/) });
}

describe('JSON nesting limit without recursion (docs/api.md#errors)', () => {
  it.each([65, 3_000, 10_000, 20_000, 100_000])('%i levels is a 400 naming the limit, never a 500', async (depth) => {
    for (const body of [nested(depth), metadataNested(depth)]) {
      const res = await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body, headers: JSON_TYPE });
      expect(res.statusCode, res.body.slice(0, 200)).toBe(400);
      expect(json(res).error).toMatchObject({
        code: 'validation_error',
        details: [{ field: 'body', issue: 'too_deep' }],
      });
    }
  });

  it('64 levels are parsed (and then validated as usual)', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: metadataNested(64),
      headers: JSON_TYPE,
    });
    expect(res.statusCode).toBe(400);
    expect(json(res).error.code).toBe('validation_error');
    expect(json(res).error.details.map((d: { issue: string }) => d.issue)).not.toContain('too_deep');
    // Brackets inside strings are text, not nesting.
    const name = '['.repeat(100);
    const ok = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name, type: 'standard' },
    });
    expect(ok.statusCode, ok.body).toBe(201);
  });

  it('unstorable strings are found in a wide body without recursion, in document order', async () => {
    const metadata: Record<string, string> = {};
    for (let i = 0; i < 2000; i++) metadata[`k${i}`] = i % 1000 === 1 ? 'bad\u0000' : 'ok';
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name: 'x', type: 'standard', metadata },
    });
    expect(res.statusCode).toBe(400);
    expect(json(res).error.details.map((d: { field: string }) => d.field)).toEqual(['metadata.k1', 'metadata.k1001']);
  });

  it('unknown routes answer 404 without parsing the body (and without a key)', async () => {
    for (const payload of [nested(20_000), '{not json', metadataNested(100)]) {
      const res = await t.request({ method: 'POST', url: '/v1/nope', body: payload, headers: JSON_TYPE });
      expect(res.statusCode).toBe(404);
      expect(json(res).error.code).toBe('not_found');
    }
  });
});

describe('protocol-level errors answer the error body (docs/api.md#errors)', () => {
  it('an unknown method is a 400 with the error body, and the connection is closed with Connection: close', async () => {
    const r = await rawRequest(port, ['FOO /v1/resources HTTP/1.1\r\nHost: x\r\n\r\n']);
    expect(r.status).toBe(400);
    expect(r.headers.connection).toBe('close');
    expectD1(r.body, 'invalid_request');
    expect(r.closed).toBe(true);
  });

  it('a bad Content-Length is a 400 with the error body', async () => {
    for (const cl of ['abc', '1, 2', '-1']) {
      const r = await rawRequest(port, [`POST /v1/resources HTTP/1.1\r\nHost: x\r\nContent-Length: ${cl}\r\n\r\n`]);
      expect(r.status, cl).toBe(400);
      expect(r.headers.connection).toBe('close');
      expectD1(r.body, 'invalid_request');
    }
  });

  it('headers or a URL over 16 KiB are a 431 with the error body; to HEAD without a body', async () => {
    const big = 'a'.repeat(17 * 1024);
    for (const req of [
      `GET /v1/resources HTTP/1.1\r\nHost: x\r\nX-Big: ${big}\r\n\r\n`,
      `GET /v1/${big} HTTP/1.1\r\nHost: x\r\n\r\n`,
    ]) {
      const r = await rawRequest(port, [req]);
      expect(r.status).toBe(431);
      expect(r.headers.connection).toBe('close');
      expectD1(r.body, 'headers_too_large');
      expect(r.closed).toBe(true);
    }
    const head = await rawRequest(port, [`HEAD /v1/resources HTTP/1.1\r\nHost: x\r\nX-Big: ${big}\r\n\r\n`]);
    expect(head.status).toBe(431);
    expect(head.body).toBe('');
  });

  it('an HTTP/1.1 request without Host is a 400 with the error body and Connection: close', async () => {
    const r = await rawRequest(port, ['GET /v1/resources HTTP/1.1\r\n\r\n']);
    expect(r.status).toBe(400);
    expect(r.headers.connection).toBe('close');
    expectD1(r.body, 'invalid_request');
    expect(r.closed).toBe(true);
  });

  it('unknown methods on known paths are 405 with Allow (TRACE, PROPFIND, …); on unknown paths 404', async () => {
    for (const method of ['TRACE', 'PROPFIND', 'PATCH', 'DELETE']) {
      const r = await rawRequest(port, [`${method} /v1/resources HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`]);
      expect(r.status, method).toBe(405);
      expect(r.headers.allow).toBe('GET, HEAD, POST');
      expectD1(r.body, 'method_not_allowed');
    }
    const byId = await rawRequest(port, [
      'TRACE /v1/resources/res_123/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    ]);
    expect(byId.status).toBe(405);
    expect(byId.headers.allow).toBe('DELETE, GET, HEAD, PUT');
    const unknown = await rawRequest(port, ['TRACE /v1/nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']);
    expect(unknown.status).toBe(404);
    expectD1(unknown.body, 'not_found');
    const head = await rawRequest(port, ['HEAD /v1/nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']);
    expect(head.status).toBe(404);
    expect(head.body).toBe('');
  });

  it('a body over the limit is refused by its Content-Length before it is sent (413, Connection: close)', async () => {
    const r = await rawRequest(port, [
      `POST /v1/resources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ws.live}\r\nContent-Type: application/json\r\nContent-Length: ${50 * 1024 * 1024}\r\n\r\n`,
    ]);
    expect(r.status).toBe(413);
    expect(r.headers.connection).toBe('close');
    expectD1(r.body, 'payload_too_large');
    expect(r.closed).toBe(true);
  });

  it('an answer sent before the body is read closes the connection and says so', async () => {
    const r = await rawRequest(port, [
      'POST /v1/resources HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":',
    ]);
    expect(r.status).toBe(401);
    expect(r.headers.connection).toBe('close');
    expect(r.closed).toBe(true);
  });

  it('an idle keep-alive connection is not cut by the headers timeout (only keep-alive ends it)', async () => {
    const req = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    const r = await rawRequest(port, [req, req], {
      gapMs: HEADERS_TIMEOUT_MS + 1500,
      waitMs: HEADERS_TIMEOUT_MS + 2500,
    });
    expect(r.text.match(/HTTP\/1\.1 200 OK/g)).toHaveLength(2);
    expect(r.text).not.toContain('HTTP/1.1 408');
  }, 30_000);

  it('a slowloris client sending headers byte by byte is cut at HTTP_HEADERS_TIMEOUT_MS with a 408', async () => {
    const head = 'GET /v1/resources HTTP/1.1\r\nHost: x\r\nX-Slow: ';
    const drip = Array.from({ length: 200 }, () => 'a');
    const r = await rawRequest(port, [head, ...drip], { gapMs: 100, waitMs: 20_000 });
    console.log(`slowloris cut after ${r.ms} ms (headers timeout ${HEADERS_TIMEOUT_MS} ms)`);
    expect(r.closed).toBe(true);
    // Node checks the timeouts once a second; plus a margin for a loaded machine.
    expect(r.ms).toBeLessThan(HEADERS_TIMEOUT_MS + 1000 + 2500);
    expect(r.status).toBe(408);
    expect(r.headers.connection).toBe('close');
    expectD1(r.body, 'request_timeout');
  }, 30_000);
});

describe('shutting down (docs/api.md#errors)', () => {
  it('a request that arrives while the server closes gets the 503 with the error body with Retry-After and Connection: close', async () => {
    const slow = await startTestApp({
      wrapServices(s) {
        const list = s.resources.list;
        s.resources.list = async (...args) => {
          await new Promise((r) => setTimeout(r, 600));
          return list(...args);
        };
      },
    });
    await slow.app.listen({ port: 0, host: '127.0.0.1' });
    const slowPort = (slow.app.server.address() as AddressInfo).port;
    const w = await newWorkspace(slow);
    const get = `GET /v1/resources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${w.live}\r\n\r\n`;
    // Two requests on one keep-alive connection: close begins while the first is in flight, and
    // the second is sent after that.
    const answered = rawRequest(slowPort, [get, get], { gapMs: 400, waitMs: 5000 });
    await new Promise((r) => setTimeout(r, 200));
    const closed = slow.close();
    const r = await answered;
    await closed;
    const second = r.text.slice(r.text.indexOf('HTTP/1.1', 10));
    expect(r.status).toBe(200);
    expect(second).toMatch(/^HTTP\/1\.1 503/);
    expect(second.toLowerCase()).toContain('connection: close');
    expect(second.toLowerCase()).toContain('retry-after: 1');
    expectD1(second.slice(second.indexOf('\r\n\r\n') + 4), 'service_unavailable');
  });
});

describe('CONNECT (docs/api.md#errors)', () => {
  it('is a 405 with the error body, not a dropped connection', async () => {
    const r = await rawRequest(port, ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n']);
    expect(r.status).toBe(405);
    expect(r.headers.connection).toBe('close');
    expectD1(r.body, 'method_not_allowed');
    expect(r.closed).toBe(true);
  });
});
