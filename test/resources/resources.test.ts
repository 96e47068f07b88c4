import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import { expectNoChange } from '../helpers/snapshot.js';

// Backends: both — resources are stored exactly as sent and counted on each database
// Tier: quick

let t: TestApp;
let now = Date.parse('2026-11-22T10:00:00.000Z');
beforeAll(async () => {
  // An injected clock: each read moves it 1 ms, so updated_at visibly changes (docs/api.md#timestamps).
  t = await startTestApp({ clock: { now: () => now++ } });
});
afterAll(() => t.close());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function get(ws: TestWorkspace, id: string, key = ws.live) {
  return t.request({ method: 'GET', url: `/v1/resources/${id}`, key });
}

describe('resources CRUD (spec, docs/api.md#ids, docs/api.md#timestamps, docs/api.md#resources, docs/api.md#resources)', () => {
  it('creates, reads, updates, archives and deletes', async () => {
    const ws = await newWorkspace(t);
    const created = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name: 'Alpha', type: 'premium', metadata: { color: 'blue' } },
    });
    expect(created.statusCode).toBe(201);
    const r = json(created).data;
    expect(Object.keys(r).sort()).toEqual(
      ['created_at', 'id', 'metadata', 'name', 'status', 'type', 'updated_at', 'workspace_id'].sort(),
    );
    expect(r).toMatchObject({ name: 'Alpha', type: 'premium', status: 'active', metadata: { color: 'blue' } });
    expect(r.id).toMatch(/^res_[0-9A-Z]{26}$/);
    expect(r.workspace_id).toBe(ws.id);
    expect(r.created_at).toMatch(ISO);
    expect(r.updated_at).toBe(r.created_at);

    const got = await get(ws, r.id);
    expect(json(got)).toEqual({ data: r });

    const put = await t.request({
      method: 'PUT',
      url: `/v1/resources/${r.id}`,
      key: ws.live,
      body: { metadata: { size: 'L' } },
    });
    expect(put.statusCode).toBe(200);
    const updated = json(put).data;
    // Omitted name stays; metadata is replaced whole (color is gone).
    expect(updated).toMatchObject({ name: 'Alpha', type: 'premium', metadata: { size: 'L' } });
    expect(updated.created_at).toBe(r.created_at);
    expect(updated.updated_at > r.updated_at).toBe(true);
    expect(json(await get(ws, r.id)).data).toEqual(updated);

    const arch = await t.request({ method: 'POST', url: `/v1/resources/${r.id}/archive`, key: ws.live });
    expect(arch.statusCode).toBe(200);
    expect(json(arch).data.status).toBe('archived');
    expect(json(arch).data.updated_at > updated.updated_at).toBe(true);
    // docs/api.md#resources: repeating a transition answers 200 and changes nothing.
    const again = await expectNoChange(t, () =>
      t.request({ method: 'POST', url: `/v1/resources/${r.id}/archive`, key: ws.live }),
    );
    expect(again.statusCode).toBe(200);
    expect(json(again).data).toEqual(json(arch).data);

    const un = await t.request({ method: 'POST', url: `/v1/resources/${r.id}/unarchive`, key: ws.live });
    expect(json(un).data.status).toBe('active');
    const unAgain = await expectNoChange(t, () =>
      t.request({ method: 'POST', url: `/v1/resources/${r.id}/unarchive`, key: ws.live }),
    );
    expect(json(unAgain).data).toEqual(json(un).data);

    const del = await t.request({ method: 'DELETE', url: `/v1/resources/${r.id}`, key: ws.live });
    expect(del.statusCode).toBe(204);
    expect(del.body).toBe('');
    expectError(await get(ws, r.id), 404, 'not_found');
    // docs/api.md#resources: a second DELETE is a 404.
    expectError(await t.request({ method: 'DELETE', url: `/v1/resources/${r.id}`, key: ws.live }), 404, 'not_found');
    for (const action of ['archive', 'unarchive']) {
      expectError(
        await t.request({ method: 'POST', url: `/v1/resources/${r.id}/${action}`, key: ws.live }),
        404,
        'not_found',
      );
    }
  });

  it('PUT with {} and PUT with the same values change nothing visible but are accepted', async () => {
    const ws = await newWorkspace(t);
    const id = await createResource(t, ws.live);
    const before = json(await get(ws, id)).data;
    const res = await expectNoChange(t, () =>
      t.request({ method: 'PUT', url: `/v1/resources/${id}`, key: ws.live, body: {} }),
    );
    expect(res.statusCode).toBe(200);
    expect(json(res).data).toEqual(before);
  });

  it('stores strings exactly as sent (docs/api.md#validation), metadata values may be empty (docs/api.md#resources)', async () => {
    const ws = await newWorkspace(t);
    // Not trimmed, not escaped; control characters (a tab) are refused since names are single-line (docs/api.md#names).
    const name = "  Ünïcødé 😀 \u00a0 <b>x</b> ' or 1=1 -- ";
    const id = await createResource(t, ws.live, { name, type: 'custom', metadata: { 'a.b': '', ç: ' v ' } });
    expect(json(await get(ws, id)).data).toMatchObject({ name, metadata: { 'a.b': '', ç: ' v ' } });
  });
});

describe('resource input rules (docs/api.md#errors, #validation, #resources): 400 with details and nothing written', () => {
  let ws: TestWorkspace;
  let id: string;
  beforeAll(async () => {
    ws = await newWorkspace(t);
    id = await createResource(t, ws.live);
  });

  const big = (n: number, prefix = 'k') =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, 'v']));
  const cases: [string, unknown, { field: string; issue?: string }][] = [
    ['name missing', { type: 'standard' }, { field: 'name', issue: 'required' }],
    ['type missing', { name: 'a' }, { field: 'type', issue: 'required' }],
    ['name empty', { name: '', type: 'standard' }, { field: 'name', issue: 'too_short' }],
    ['name 256 chars', { name: 'x'.repeat(256), type: 'standard' }, { field: 'name', issue: 'too_long' }],
    [
      'name 256 emoji (code points, docs/api.md#validation)',
      { name: '😀'.repeat(256), type: 'standard' },
      { field: 'name', issue: 'too_long' },
    ],
    ['name a number', { name: 123, type: 'standard' }, { field: 'name', issue: 'invalid_type' }],
    ['name null', { name: null, type: 'standard' }, { field: 'name', issue: 'invalid_type' }],
    ['type unknown', { name: 'a', type: 'gold' }, { field: 'type' }],
    ['type wrong case', { name: 'a', type: 'Standard' }, { field: 'type' }],
    [
      'status is read-only',
      { name: 'a', type: 'standard', status: 'active' },
      { field: 'status', issue: 'unknown_field' },
    ],
    [
      'id is read-only (docs/api.md#validation)',
      { name: 'a', type: 'standard', id: 'res_x' },
      { field: 'id', issue: 'unknown_field' },
    ],
    [
      'workspace_id is read-only',
      { name: 'a', type: 'standard', workspace_id: 'ws_x' },
      { field: 'workspace_id', issue: 'unknown_field' },
    ],
    ['unknown field', { name: 'a', type: 'standard', colour: 'red' }, { field: 'colour', issue: 'unknown_field' }],
    ['metadata null', { name: 'a', type: 'standard', metadata: null }, { field: 'metadata', issue: 'invalid_type' }],
    ['metadata array', { name: 'a', type: 'standard', metadata: ['x'] }, { field: 'metadata', issue: 'invalid_type' }],
    ['metadata string', { name: 'a', type: 'standard', metadata: 'x' }, { field: 'metadata', issue: 'invalid_type' }],
    [
      'metadata number value',
      { name: 'a', type: 'standard', metadata: { n: 1 } },
      { field: 'metadata.n', issue: 'invalid_type' },
    ],
    [
      'metadata boolean value',
      { name: 'a', type: 'standard', metadata: { b: true } },
      { field: 'metadata.b', issue: 'invalid_type' },
    ],
    [
      'metadata null value',
      { name: 'a', type: 'standard', metadata: { z: null } },
      { field: 'metadata.z', issue: 'invalid_type' },
    ],
    [
      'metadata nested object',
      { name: 'a', type: 'standard', metadata: { o: { p: 'q' } } },
      { field: 'metadata.o', issue: 'invalid_type' },
    ],
    [
      'metadata array value',
      { name: 'a', type: 'standard', metadata: { l: ['x'] } },
      { field: 'metadata.l', issue: 'invalid_type' },
    ],
    ['metadata 51 keys', { name: 'a', type: 'standard', metadata: big(51) }, { field: 'metadata', issue: 'too_many' }],
    [
      'metadata empty key',
      { name: 'a', type: 'standard', metadata: { '': 'v' } },
      { field: 'metadata', issue: 'empty_key' },
    ],
    [
      'metadata key 41 chars',
      { name: 'a', type: 'standard', metadata: { ['k'.repeat(41)]: 'v' } },
      { field: `metadata.${'k'.repeat(41)}`, issue: 'key_too_long' },
    ],
    [
      'metadata key 41 emoji',
      { name: 'a', type: 'standard', metadata: { ['😀'.repeat(41)]: 'v' } },
      { field: `metadata.${'😀'.repeat(41)}`, issue: 'key_too_long' },
    ],
    [
      'metadata value 501 chars',
      { name: 'a', type: 'standard', metadata: { color: 'x'.repeat(501) } },
      { field: 'metadata.color', issue: 'too_long' },
    ],
    [
      'metadata value 501 emoji',
      { name: 'a', type: 'standard', metadata: { color: '😀'.repeat(501) } },
      { field: 'metadata.color', issue: 'too_long' },
    ],
    [
      'name with a NUL character',
      { name: 'a\u0000b', type: 'standard' },
      { field: 'name', issue: 'invalid_character' },
    ],
    [
      'name with a lone surrogate',
      { name: 'a\ud800b', type: 'standard' },
      { field: 'name', issue: 'invalid_character' },
    ],
    [
      'metadata value with NUL',
      { name: 'a', type: 'standard', metadata: { k: '\u0000' } },
      { field: 'metadata.k', issue: 'invalid_character' },
    ],
    [
      'metadata key with NUL',
      { name: 'a', type: 'standard', metadata: { 'k\u0000': 'v' } },
      { field: 'metadata', issue: 'invalid_character' },
    ],
    ['body an array', [{ name: 'a', type: 'standard' }], { field: 'body', issue: 'invalid_type' }],
    ['body a string', 'just text', { field: 'body', issue: 'invalid_type' }],
  ];

  for (const [label, body, problem] of cases) {
    it(`POST: ${label}`, async () => {
      const payload = typeof body === 'string' ? JSON.stringify(body) : body;
      const res = await expectNoChange(t, () =>
        t.request({
          method: 'POST',
          url: '/v1/resources',
          key: ws.live,
          body: payload,
          headers: { 'content-type': 'application/json' },
        }),
      );
      expectValidation(res, problem);
    });
  }

  it('GET: a query value with a NUL character is a 400 naming it, as in a body (found by the fuzz test on PostgreSQL)', async () => {
    for (const url of ['/v1/events?resource_id=%00', '/v1/events?resource_id=a%00b', '/v1/resources?type=%00']) {
      const res = await t.request({ method: 'GET', url, key: ws.live });
      const field = url.includes('type=') ? 'type' : 'resource_id';
      expectValidation(res, { field, issue: 'invalid_character' });
    }
  });

  it('POST: several problems are reported together, one detail each', async () => {
    const res = await expectNoChange(t, () =>
      t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: '', type: 'x', extra: 1 } }),
    );
    const err = expectValidation(res, { field: 'name' }, { field: 'type' }, { field: 'extra', issue: 'unknown_field' });
    expect(err.details?.length).toBe(3);
  });

  it('POST: the limits themselves are accepted (255/40/500 code points, 50 keys)', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: {
        name: '😀'.repeat(255),
        type: 'standard',
        metadata: { ...big(49), ['😀'.repeat(40)]: '😀'.repeat(500) },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect([...json(res).data.name].length).toBe(255);
    expect(Object.keys(json(res).data.metadata).length).toBe(50);
  });

  const putCases: [string, unknown, { field: string; issue?: string }][] = [
    ['type is immutable (docs/api.md#validation)', { type: 'premium' }, { field: 'type', issue: 'unknown_field' }],
    ['status is refused (docs/api.md#validation)', { status: 'archived' }, { field: 'status', issue: 'unknown_field' }],
    ['id is refused', { id: 'res_x' }, { field: 'id', issue: 'unknown_field' }],
    [
      'created_at is refused',
      { created_at: '2020-01-01T00:00:00.000Z' },
      { field: 'created_at', issue: 'unknown_field' },
    ],
    ['name empty', { name: '' }, { field: 'name', issue: 'too_short' }],
    ['name 256', { name: 'n'.repeat(256) }, { field: 'name', issue: 'too_long' }],
    ['name null', { name: null }, { field: 'name', issue: 'invalid_type' }],
    ['metadata null', { metadata: null }, { field: 'metadata', issue: 'invalid_type' }],
    ['metadata nested', { metadata: { a: { b: 'c' } } }, { field: 'metadata.a', issue: 'invalid_type' }],
    ['metadata 51 keys', { metadata: big(51) }, { field: 'metadata', issue: 'too_many' }],
  ];
  for (const [label, body, problem] of putCases) {
    it(`PUT: ${label}`, async () => {
      const res = await expectNoChange(t, () =>
        t.request({ method: 'PUT', url: `/v1/resources/${id}`, key: ws.live, body }),
      );
      expectValidation(res, problem);
    });
  }

  it('ids that are not res_ ids, or unknown ones, are 404 (never 400 or 500)', async () => {
    for (const bad of [
      'xyz',
      'res_',
      'res_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
      'usr_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
      `res_${'A'.repeat(180)}`,
      "res_' or 1=1 --",
      '%F0%9F%98%80',
    ]) {
      for (const [method, suffix] of [
        ['GET', ''],
        ['PUT', ''],
        ['DELETE', ''],
        ['POST', '/archive'],
        ['POST', '/unarchive'],
      ] as const) {
        const res = await expectNoChange(t, () =>
          t.request({
            method,
            url: `/v1/resources/${encodeURIComponent(decodeURIComponent(bad))}${suffix}`,
            key: ws.live,
            body: method === 'PUT' ? { name: 'x' } : undefined,
          }),
        );
        expectError(res, 404, 'not_found');
      }
    }
  });
});
