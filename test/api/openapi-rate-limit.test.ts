// Backends: both — the rate limit counts in memory or in Redis, and the key is read from storage
// Tier: quick
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import spectralCore from '@stoplight/spectral-core';
import owasp from '@stoplight/spectral-owasp-ruleset';
import parsers from '@stoplight/spectral-parsers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { rawRequest } from '../helpers/raw-http.js';

// docs/api.md#the-openapi-document: which answers carry X-RateLimit-*, on the wire and in the
// document alike. 408 and 431 come from Node's HTTP parser before any route or key is known: they
// carry none, and the document declares none; every other 2xx and 4xx of a key's request (401
// aside) carries them. Spectral's OWASP rate-limit rule reports exactly those without, and the
// docs say which.
let t: TestApp;
let port: number;
let ws: TestWorkspace;
// biome-ignore lint/suspicious/noExplicitAny: walks an untyped JSON document
let doc: any;
let text: string;
beforeAll(async () => {
  t = await startTestApp({ config: { HTTP_HEADERS_TIMEOUT_MS: 1000, HTTP_REQUEST_TIMEOUT_MS: 1500 } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
  ws = await newWorkspace(t);
  text = (await t.request({ method: 'GET', url: '/v1/openapi.json' })).body;
  doc = JSON.parse(text);
});
afterAll(() => t?.close());

const rateLimitHeaders = (headers: Record<string, string>) =>
  Object.keys(headers).filter((h) => /^x-ratelimit-/.test(h));

describe('rate-limit headers: the wire and the document agree (docs/api.md#the-openapi-document)', () => {
  it('431 and 408 carry none, for a valid key too, and the document declares none', async () => {
    const big = await rawRequest(port, [
      `GET /v1/resources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ws.live}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    ]);
    expect(big.status).toBe(431);
    expect(rateLimitHeaders(big.headers)).toEqual([]);
    // Headers complete, the body never finished: the request timeout answers.
    const slow = await rawRequest(
      port,
      [
        `POST /v1/resources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ws.live}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`,
      ],
      { waitMs: 6000 },
    );
    expect(slow.status).toBe(408);
    expect(rateLimitHeaders(slow.headers)).toEqual([]);
    for (const [path, item] of Object.entries<Record<string, { responses: Record<string, { headers: object }> }>>(
      doc.paths,
    )) {
      for (const [method, op] of Object.entries(item)) {
        for (const status of ['408', '431']) {
          const headers = Object.keys(op.responses?.[status]?.headers ?? {});
          expect(
            headers.filter((h) => /^X-RateLimit-/i.test(h)),
            `${method} ${path} ${status}`,
          ).toEqual([]);
        }
      }
    }
  }, 20_000);

  it('a 413 for a valid key, answered before the body is read, carries them as declared', async () => {
    const r = await rawRequest(port, [
      `POST /v1/resources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ws.live}\r\nContent-Type: application/json\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n`,
    ]);
    expect(r.status, r.text).toBe(413);
    expect(rateLimitHeaders(r.headers).sort()).toEqual([
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
    ]);
    const declared = doc.paths['/v1/resources'].post.responses['413'].headers;
    expect(Object.keys(declared)).toEqual(expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining']));
  });

  it("Spectral's OWASP rate-limit rule reports exactly the 401, 408 and 431 answers, and docs/api.md names each", async () => {
    const { Spectral, Document } = spectralCore;
    const spectral = new Spectral();
    spectral.setRuleset({ extends: [[owasp, 'all']] } as never);
    const findings = await spectral.run(new Document(text, parsers.Json, 'openapi.json'));
    const statuses = new Set(
      findings.filter((f) => f.code === 'owasp:api4:2023-rate-limit').map((f) => String(f.path[4])),
    );
    expect([...statuses].sort()).toEqual(['401', '408', '431']);
    const docs = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    const section = docs.slice(docs.indexOf('## The OpenAPI document'));
    const bullet = section.slice(section.indexOf('- `owasp:api4:2023-rate-limit`')).split('\n- ')[0] ?? '';
    for (const status of statuses) expect(bullet, `the rate-limit bullet names ${status}`).toContain(status);
  });
});
