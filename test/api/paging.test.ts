import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';
import { expectError, expectValidation } from '../helpers/expect.js';

// Backends: both — offset and cursor paging and the maintained counts are SQL on each database
// Tier: quick

let t: TestApp;
let ws: TestWorkspace;
const all: { id: string; type: string; status: string }[] = [];
const userIds: string[] = [];
const TYPES = ['standard', 'premium', 'custom'] as const;

beforeAll(async () => {
  t = await startTestApp();
  ws = await newWorkspace(t);
  for (let i = 0; i < 23; i++) {
    const type = TYPES[i % 3] as string;
    const id = await createResource(t, ws.live, { name: `r${i}`, type });
    let status = 'active';
    if (i % 4 === 0) {
      await t.request({ method: 'POST', url: `/v1/resources/${id}/archive`, key: ws.live });
      status = 'archived';
    }
    all.push({ id, type, status });
  }
  // Test-mode and other-workspace resources never appear in this live list (docs/api.md#environments).
  await createResource(t, ws.test);
  await createResource(t, (await newWorkspace(t)).live);
  userIds.push(ws.adminId);
  for (let i = 0; i < 4; i++) userIds.push((await ws.member('viewer')).userId);
});
afterAll(() => t.close());

type Page = {
  data: { id: string }[];
  meta: { total: number; limit: number; offset: number; next_cursor: string | null };
};

async function page(url: string, key = ws.live): Promise<Page> {
  const res = await t.request({ method: 'GET', url, key });
  expect(res.statusCode, res.body).toBe(200);
  return json(res);
}

/** Walks a list to the end with offset, as the spec says: offset += limit until offset >= total. */
async function walkOffset(base: string, limit: number) {
  const ids: string[] = [];
  let offset = 0;
  for (;;) {
    const p = await page(`${base}${base.includes('?') ? '&' : '?'}limit=${limit}&offset=${offset}`);
    expect(p.meta).toMatchObject({ limit, offset });
    expect(p.data.length).toBeLessThanOrEqual(limit);
    ids.push(...p.data.map((r) => r.id));
    offset += limit;
    if (offset >= p.meta.total) {
      expect(p.meta.next_cursor).toBeNull();
      return { ids, total: p.meta.total };
    }
    expect(p.meta.next_cursor).not.toBeNull();
  }
}

/** Walks a list to the end with next_cursor (docs/api.md#lists-and-paging). */
async function walkCursor(base: string, limit: number) {
  const ids: string[] = [];
  const sep = base.includes('?') ? '&' : '?';
  let p = await page(`${base}${sep}limit=${limit}`);
  let pages = 1;
  for (;;) {
    expect(p.meta.offset).toBe(ids.length);
    ids.push(...p.data.map((r) => r.id));
    if (p.meta.next_cursor === null) return { ids, total: p.meta.total, pages };
    p = await page(`${base}${sep}limit=${limit}&cursor=${encodeURIComponent(p.meta.next_cursor)}`);
    pages++;
  }
}

describe('GET /resources paging (docs/api.md#lists-and-paging)', () => {
  const filters: [string, (r: (typeof all)[number]) => boolean][] = [
    ['', () => true],
    ['status=active', (r) => r.status === 'active'],
    ['status=archived', (r) => r.status === 'archived'],
    ['type=premium', (r) => r.type === 'premium'],
    ['type=custom&status=active', (r) => r.type === 'custom' && r.status === 'active'],
  ];
  for (const [filter, keep] of filters) {
    for (const limit of [1, 5, 7, 100]) {
      it(`offset and cursor walks give every record once, oldest first (${filter || 'no filter'}, limit ${limit})`, async () => {
        const expected = all.filter(keep).map((r) => r.id);
        const base = `/v1/resources${filter ? `?${filter}` : ''}`;
        const byOffset = await walkOffset(base, limit);
        expect(byOffset.ids).toEqual(expected);
        expect(byOffset.total).toBe(expected.length);
        const byCursor = await walkCursor(base, limit);
        expect(byCursor.ids).toEqual(expected);
        expect(byCursor.total).toBe(expected.length);
        expect(byCursor.pages).toBe(Math.max(1, Math.ceil(expected.length / limit)));
      });
    }
  }

  it('defaults: limit 20, offset 0', async () => {
    const p = await page('/v1/resources');
    expect(p.meta).toMatchObject({ total: 23, limit: 20, offset: 0 });
    expect(p.data.length).toBe(20);
  });

  it('an offset past the end is an empty page, not an error', async () => {
    const p = await page('/v1/resources?offset=1000');
    expect(p).toEqual({ data: [], meta: { total: 23, limit: 20, offset: 1000, next_cursor: null } });
  });

  it('a cursor keeps its place while records are added and removed (keyset)', async () => {
    const w = await newWorkspace(t);
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await createResource(t, w.live));
    const first = await page('/v1/resources?limit=2', w.live);
    await t.request({ method: 'DELETE', url: `/v1/resources/${ids[0]}`, key: w.live });
    await t.request({ method: 'DELETE', url: `/v1/resources/${ids[1]}`, key: w.live });
    const added = await createResource(t, w.live);
    const next = await page(`/v1/resources?limit=2&cursor=${first.meta.next_cursor}`, w.live);
    expect(next.data.map((r) => r.id)).toEqual([ids[2], ids[3]]);
    const last = await page(`/v1/resources?limit=2&cursor=${next.meta.next_cursor}`, w.live);
    expect(last.data.map((r) => r.id)).toEqual([added]);
    expect(last.meta.next_cursor).toBeNull();
  });

  it('meta.total follows creates, deletes, archives and unarchives (maintained counts)', async () => {
    const w = await newWorkspace(t);
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await createResource(t, w.live, { name: `c${i}`, type: 'premium' }));
    const totals = async () =>
      Promise.all(
        ['', 'status=active', 'status=archived', 'type=premium', 'type=standard&status=archived'].map(
          async (q) => (await page(`/v1/resources?${q}`, w.live)).meta.total,
        ),
      );
    expect(await totals()).toEqual([5, 5, 0, 5, 0]);
    await t.request({ method: 'POST', url: `/v1/resources/${ids[0]}/archive`, key: w.live });
    await t.request({ method: 'POST', url: `/v1/resources/${ids[0]}/archive`, key: w.live });
    await t.request({ method: 'POST', url: `/v1/resources/${ids[1]}/archive`, key: w.live });
    await t.request({ method: 'DELETE', url: `/v1/resources/${ids[2]}`, key: w.live });
    await t.request({ method: 'DELETE', url: `/v1/resources/${ids[1]}`, key: w.live });
    expect(await totals()).toEqual([3, 2, 1, 3, 0]);
    await t.request({ method: 'POST', url: `/v1/resources/${ids[0]}/unarchive`, key: w.live });
    await t.request({ method: 'PUT', url: `/v1/resources/${ids[0]}`, key: w.live, body: { name: 'renamed' } });
    expect(await totals()).toEqual([3, 3, 0, 3, 0]);
  });

  it('the test environment has its own list', async () => {
    const p = await page('/v1/resources', ws.test);
    expect(p.meta.total).toBe(1);
  });
});

describe('GET /users paging (docs/api.md#lists-and-paging)', () => {
  for (const limit of [1, 2, 3, 100]) {
    it(`offset and cursor walks give every member once (limit ${limit})`, async () => {
      expect((await walkOffset('/v1/users', limit)).ids).toEqual(userIds);
      expect((await walkCursor('/v1/users', limit)).ids).toEqual(userIds);
    });
  }
});

describe('bad paging and filter values: 400, never clamped (docs/api.md#lists-and-paging)', () => {
  const cases: [string, string][] = [
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=1.5', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=', 'limit'],
    ['limit=0x10', 'limit'],
    ['limit=1e1', 'limit'],
    ['limit=%205', 'limit'],
    ['limit=5&limit=6', 'limit'],
    ['offset=-1', 'offset'],
    ['offset=1.0', 'offset'],
    ['offset=x', 'offset'],
    ['offset=', 'offset'],
    ['offset=99999999999999999999', 'offset'],
    ['offset=2147483648', 'offset'],
    ['cursor=', 'cursor'],
    ['cursor=not-a-cursor', 'cursor'],
    [`cursor=${Buffer.from('{"v":1,"after":5}').toString('base64url')}`, 'cursor'],
    [`cursor=${'a'.repeat(600)}`, 'cursor'],
    ['offset=0&cursor=x', 'offset'],
    ['unknown=1', 'unknown'],
    ['Limit=5', 'Limit'],
  ];
  for (const list of ['/v1/resources', '/v1/users']) {
    for (const [query, field] of cases) {
      it(`${list}?${query} → 400 (${field})`, async () => {
        const res = await t.request({ method: 'GET', url: `${list}?${query}`, key: ws.live });
        expectValidation(res, { field });
      });
    }
  }

  for (const list of ['/v1/resources', '/v1/users']) {
    it(`${list}?limit=abc&offset=-1 → 400 with one detail per problem (docs/api.md#errors)`, async () => {
      const res = await t.request({ method: 'GET', url: `${list}?limit=abc&offset=-1`, key: ws.live });
      const err = expectValidation(
        res,
        { field: 'limit', issue: 'invalid_type' },
        { field: 'offset', issue: 'out_of_range' },
      );
      expect(err.details).toHaveLength(2);
    });
  }

  it('a value refused as not decimal is reported once, beside the other problems (docs/api.md#errors)', async () => {
    const res = await t.request({ method: 'GET', url: '/v1/users?limit=0x10&offset=x&foo=1', key: ws.live });
    const err = expectValidation(
      res,
      { field: 'limit', issue: 'invalid_type' },
      { field: 'offset', issue: 'invalid_type' },
      { field: 'foo', issue: 'unknown_field' },
    );
    expect(err.details).toHaveLength(3);
  });

  it('a cursor from another list is refused', async () => {
    const users = await page('/v1/users?limit=1');
    expect(users.meta.next_cursor).not.toBeNull();
    const res = await t.request({
      method: 'GET',
      url: `/v1/resources?cursor=${users.meta.next_cursor}`,
      key: ws.live,
    });
    expectValidation(res, { field: 'cursor', issue: 'invalid_value' });
  });

  for (const q of ['status=paused', 'status=ACTIVE', 'type=gold', 'status=active&status=archived']) {
    it(`GET /v1/resources?${q} → 400`, async () => {
      const res = await t.request({ method: 'GET', url: `/v1/resources?${q}`, key: ws.live });
      expectError(res, 400, 'validation_error');
    });
  }
});
