import { readFileSync } from 'node:fs';
import spectralCore from '@stoplight/spectral-core';
import owasp from '@stoplight/spectral-owasp-ruleset';
import parsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { contractOf } from '../helpers/contract.js';

// Backends: sqlite — the served OpenAPI document's shape, lint and route table
// Tier: quick
// The served document is checked by Spectral (docs/api.md#the-openapi-document), against the live
// route table, and the response validator of the test helpers is itself shown to catch drift.

let t: TestApp;
let text: string;
// biome-ignore lint/suspicious/noExplicitAny: walks an untyped JSON document
type Json = Record<string, any>;
let doc: Json;
beforeAll(async () => {
  t = await startTestApp();
  text = (await t.request({ method: 'GET', url: '/v1/openapi.json' })).body;
  doc = JSON.parse(text);
});
afterAll(() => t.close());

type Finding = { code: string | number; severity: number; path: (string | number)[]; message: string };
async function lint(ruleset: unknown): Promise<Finding[]> {
  const { Spectral, Document } = spectralCore;
  const spectral = new Spectral();
  spectral.setRuleset(ruleset as never);
  return spectral.run(new Document(text, parsers.Json, 'openapi.json'));
}
const show = (f: Finding[]) => f.map((x) => `${x.code} ${x.path.join('.')}: ${x.message}`);
const OPERATIONS = ['get', 'put', 'post', 'patch', 'delete'];

describe('the OpenAPI document', () => {
  it('passes Spectral’s OpenAPI ruleset with no error and no warning', async () => {
    const findings = await lint({ extends: [[oas, 'recommended']] });
    expect(show(findings.filter((f) => f.severity <= 1))).toEqual([]);
  });

  it('has every OWASP API ruleset finding fixed on inputs, and the rest explained in docs/api.md', async () => {
    const findings = await lint({ extends: [[owasp, 'all']] });
    const limits = /api4:2023-(string-limit|array-limit|integer-limit|integer-format)$/;
    const onInput = findings.filter(
      (f) => limits.test(String(f.code)) && f.path.some((p) => p === 'requestBody' || p === 'parameters'),
    );
    expect(show(onInput)).toEqual([]);
    const docs = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    const explained = docs.slice(docs.indexOf('## The OpenAPI document'));
    const unexplained = [...new Set(findings.map((f) => String(f.code)))].filter(
      (c) => !explained.includes(`\`${c}\``),
    );
    expect(unexplained).toEqual([]);
  });

  it('describes every /v1 route the server has, and nothing it has not', () => {
    const served = [...t.app.v1Routes].flatMap(([url, methods]) =>
      [...methods].filter((m) => m !== 'HEAD').map((m) => `${m} ${url.replace(/:([a-z_]+)/g, '{$1}')}`),
    );
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item as object)
        .filter((m) => OPERATIONS.includes(m))
        .map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(documented.sort()).toEqual(served.sort());
  });

  it('gives every operation an id, a tag, a description and the shared headers and statuses', () => {
    const tags = new Set(doc.tags.map((x: { name: string }) => x.name));
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        if (!OPERATIONS.includes(method)) continue;
        const where = `${method} ${path}`;
        expect(op.operationId, where).toMatch(/^[a-z][A-Za-z]+$/);
        expect(op.description?.length, where).toBeGreaterThan(10);
        expect(
          op.tags.every((x: string) => tags.has(x)),
          where,
        ).toBe(true);
        const statuses = Object.keys(op.responses);
        for (const s of ['400', '401', '403', '408', '413', '415', '429', '431', '500', '503']) {
          expect(statuses, where).toContain(s);
        }
        if (path.includes('{')) expect(statuses, where).toContain('404');
        if (method === 'post') {
          expect(statuses, where).toContain('409');
          expect(op.parameters, where).toContainEqual({ $ref: '#/components/parameters/IdempotencyKey' });
        }
        for (const [status, res] of Object.entries<Json>(op.responses)) {
          expect(Object.keys(res.headers), `${where} ${status}`).toContain('X-Request-Id');
          // 408 and 431 are answered by the HTTP parser, before any rate limit (src/http/protocol.ts).
          const limited = status !== '401' && status[0] !== '5' && status !== '408' && status !== '431';
          expect(res.headers['X-RateLimit-Limit'] !== undefined, `${where} ${status}`).toBe(limited);
          if (status === '429' || status === '503') expect(res.headers['Retry-After']).toBeDefined();
        }
        for (const p of op.parameters ?? []) {
          if (p.in === 'path') expect(p.schema, `${where} ${p.name}`).toMatchObject({ maxLength: expect.any(Number) });
          if (p.name === 'limit') expect(p).toMatchObject({ required: false, schema: { default: 20 } });
        }
      }
    }
  });

  it('is what the response validator of the tests checks, and that validator catches drift', async () => {
    const contract = await contractOf(t.app);
    const fake = (statusCode: number, body: unknown, headers: Record<string, string> = {}) =>
      ({
        statusCode,
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json', 'x-request-id': 'req_1', ...headers },
      }) as unknown as LightMyRequestResponse;
    const rl = { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '9', 'x-ratelimit-reset': '60' };
    const error = { error: { code: 'not_found', message: 'No such resource.', request_id: 'req_1' } };
    expect(contract.check('GET', '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R', fake(404, error, rl))).toEqual([]);
    // An undocumented status, a missing header, a body that breaks its schema: each is reported.
    expect(contract.check('GET', '/v1/users/me', fake(418, error, rl))).toEqual([
      'GET /v1/users/me → 418: status not documented',
    ]);
    expect(contract.check('GET', '/v1/users/me', fake(403, error))[0]).toMatch(/X-RateLimit-Limit missing/);
    expect(contract.check('GET', '/v1/resources?limit=1', fake(200, { data: [{}] }, rl)).join()).toMatch(/body/);
    expect(contract.check('GET', '/v1/nope', fake(404, { error: 'x' })).join()).toMatch(/Error/);
  });

  it('is served with every documented schema resolvable', () => {
    expect(json({ body: text } as LightMyRequestResponse).openapi).toBe('3.1.0');
    for (const m of text.matchAll(/"\$ref":"#\/components\/(\w+)\/([^"]+)"/g)) {
      expect(doc.components[m[1] as string]?.[m[2] as string], m[0]).toBeDefined();
    }
  });

  it('marks a request body required exactly where the server refuses a request without one', async () => {
    const ws = await newWorkspace(t);
    const optional: string[] = [];
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(item)) {
        if (!OPERATIONS.includes(method) || !op.requestBody) continue;
        const where = `${method.toUpperCase()} ${path}`;
        expect(typeof op.requestBody.required, where).toBe('boolean');
        // An unknown id: a body the server needs is refused by validation (400) before the handler
        // looks the id up (404); an operation without an id is created from the defaults (2xx).
        const url = path.replace(/\{[a-z_]+\}/g, 'x_01JD3K8Z6W6J9Q4X1V5N2M7P8R');
        const res = await t.request({ method: method.toUpperCase() as 'POST', url, key: ws.live });
        const refused = res.statusCode === 400 && json(res).error.code === 'validation_error';
        expect(refused, `${where} → ${res.statusCode} ${res.body}`).toBe(op.requestBody.required);
        if (!op.requestBody.required) optional.push(where);
      }
    }
    expect(optional.sort()).toEqual([
      'POST /v1/keys/{id}/roll',
      'POST /v1/webhooks/{id}/rotate-secret',
      'POST /v1/webhooks/{id}/test',
    ]);
  });
});
