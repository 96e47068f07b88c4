import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';
import { expectValidation } from '../helpers/expect.js';

// Backends: both — ordering, cursors and name_prefix matching (case, wildcards, non-ASCII) are SQL on each database
// Tier: quick
// Newest first (`order=desc`) and the resources name prefix (docs/api.md#paging, #resources), on
// both databases: every list the console shows newest first walks back to its oldest record by
// offset and by cursor, and a cursor is bound to its order.
let t: TestApp;
let ws: TestWorkspace;
const all: { id: string; name: string; type: string; status: string }[] = [];
let webhookId = '';
const NAMES = ['alpha', 'Alpha', 'al%pha', 'al_pha', 'beta', 'álpha', '🦊 fox', '🦊🦊 foxes', 'alp'];

beforeAll(async () => {
  t = await startTestApp({ config: { WEBHOOK_ALLOW_INSECURE_URLS: true } });
  ws = await newWorkspace(t);
  // An endpoint nobody answers: each resource change queues a delivery (pending), no worker runs.
  const wh = await t.request({
    method: 'POST',
    url: '/v1/webhooks',
    key: ws.live,
    body: { url: 'http://127.0.0.1:9/hook', events: ['*'] },
  });
  expect(wh.statusCode, wh.body).toBe(201);
  webhookId = json(wh).data.id;
  for (let i = 0; i < 18; i++) {
    const name = NAMES[i % NAMES.length] as string;
    const type = ['standard', 'premium', 'custom'][i % 3] as string;
    const id = await createResource(t, ws.live, { name, type });
    let status = 'active';
    if (i % 4 === 0) {
      await t.request({ method: 'POST', url: `/v1/resources/${id}/archive`, key: ws.live });
      status = 'archived';
    }
    all.push({ id, name, type, status });
  }
  await createResource(t, ws.test, { name: 'alpha', type: 'standard' });
  for (let i = 0; i < 3; i++) await ws.member('viewer');
});
afterAll(() => t.close());

type Page = {
  data: { id: string; name?: string }[];
  meta: { total: number; limit: number; offset: number; next_cursor: string | null };
};

async function page(url: string, key = ws.live): Promise<Page> {
  const res = await t.request({ method: 'GET', url, key });
  expect(res.statusCode, res.body).toBe(200);
  return json(res);
}

const q = (base: string, more: string) => `${base}${base.includes('?') ? '&' : '?'}${more}`;

async function walkCursor(base: string, limit: number) {
  const ids: string[] = [];
  let p = await page(q(base, `limit=${limit}`));
  for (;;) {
    expect(p.meta.offset).toBe(ids.length);
    ids.push(...p.data.map((r) => r.id));
    if (p.meta.next_cursor === null) return { ids, total: p.meta.total };
    p = await page(q(base, `limit=${limit}&cursor=${encodeURIComponent(p.meta.next_cursor)}`));
  }
}

async function walkOffset(base: string, limit: number) {
  const ids: string[] = [];
  for (let offset = 0; ; offset += limit) {
    const p = await page(q(base, `limit=${limit}&offset=${offset}`));
    ids.push(...p.data.map((r) => r.id));
    if (offset + limit >= p.meta.total) {
      expect(p.meta.next_cursor).toBeNull();
      return { ids, total: p.meta.total };
    }
  }
}

describe('order=desc: newest first, by offset and by cursor (docs/api.md#paging)', () => {
  const lists = [
    '/v1/resources',
    '/v1/resources?status=active',
    '/v1/resources?type=premium&status=archived',
    '/v1/events',
    '/v1/events?event=resource.status_changed',
    '/v1/users',
    '/v1/keys',
    '/v1/webhooks',
    '/v1/deliveries',
    '/v1/deliveries?webhook_id=WH',
    '/v1/deliveries?webhook_id=WH&event=resource.created',
    '/v1/webhooks/WH/deliveries',
    '/v1/webhooks/WH/deliveries?status=pending',
  ];
  for (const raw of lists) {
    for (const limit of [1, 4, 100]) {
      it(`${raw} (limit ${limit}): the reverse of the oldest-first walk`, async () => {
        const list = raw.replaceAll('WH', webhookId);
        const asc = await walkCursor(list, limit);
        expect(asc.ids.length).toBeGreaterThan(0);
        const expected = [...asc.ids].reverse();
        const byCursor = await walkCursor(q(list, 'order=desc'), limit);
        expect(byCursor).toEqual({ ids: expected, total: asc.total });
        const byOffset = await walkOffset(q(list, 'order=desc'), limit);
        expect(byOffset).toEqual({ ids: expected, total: asc.total });
        // order=asc is the default, spelled out.
        expect((await walkCursor(q(list, 'order=asc'), limit)).ids).toEqual(asc.ids);
      });
    }
  }

  it('resources newest first are the created ones reversed, with the filter applied', async () => {
    const p = await page('/v1/resources?order=desc&status=archived&limit=100');
    expect(p.data.map((r) => r.id)).toEqual(
      all
        .filter((r) => r.status === 'archived')
        .map((r) => r.id)
        .reverse(),
    );
    expect(p.meta.total).toBe(all.filter((r) => r.status === 'archived').length);
  });

  it('a newest-first cursor keeps its place: records added after the first page appear on no older page', async () => {
    const w = await newWorkspace(t);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await createResource(t, w.live));
    const first = await page('/v1/resources?order=desc&limit=2', w.live);
    expect(first.data.map((r) => r.id)).toEqual([ids[4], ids[3]]);
    const added = await createResource(t, w.live);
    await t.request({ method: 'DELETE', url: `/v1/resources/${ids[2]}`, key: w.live });
    const next = await page(`/v1/resources?order=desc&limit=2&cursor=${first.meta.next_cursor}`, w.live);
    expect(next.data.map((r) => r.id)).toEqual([ids[1], ids[0]]);
    expect(next.meta.next_cursor).toBeNull();
    // A fresh first page starts at the newest.
    expect((await page('/v1/resources?order=desc&limit=1', w.live)).data[0]?.id).toBe(added);
  });

  it('a cursor continues only in the order it was issued for: the other order is a 400 on cursor', async () => {
    for (const [issued, other] of [
      ['desc', 'asc'],
      ['asc', 'desc'],
    ]) {
      for (const list of ['/v1/resources', '/v1/events', '/v1/users']) {
        const p = await page(`${list}?order=${issued}&limit=1`);
        expect(p.meta.next_cursor).not.toBeNull();
        const res = await t.request({
          method: 'GET',
          url: `${list}?order=${other}&limit=1&cursor=${p.meta.next_cursor}`,
          key: ws.live,
        });
        expectValidation(res, { field: 'cursor', issue: 'invalid_value' });
      }
    }
    // Without order, a desc cursor is refused too (the default is asc).
    const p = await page('/v1/events?order=desc&limit=1');
    const res = await t.request({ method: 'GET', url: `/v1/events?cursor=${p.meta.next_cursor}`, key: ws.live });
    expectValidation(res, { field: 'cursor', issue: 'invalid_value' });
  });

  for (const bad of ['order=DESC', 'order=newest', 'order=', 'order=desc&order=asc']) {
    it(`?${bad} → 400 on order`, async () => {
      for (const list of ['/v1/resources', '/v1/events', '/v1/deliveries', '/v1/keys', '/v1/users', '/v1/webhooks']) {
        const res = await t.request({ method: 'GET', url: `${list}?${bad}`, key: ws.live });
        expectValidation(res, { field: 'order' });
      }
    });
  }
});

describe('GET /resources?name_prefix= (docs/api.md#resources)', () => {
  const cases: [string, (name: string) => boolean][] = [
    ['al', (n) => n.startsWith('al')],
    ['alpha', (n) => n === 'alpha'],
    ['Al', (n) => n.startsWith('Al')],
    ['al%', (n) => n.startsWith('al%')],
    ['al_', (n) => n.startsWith('al_')],
    ['%', () => false],
    ['_', () => false],
    ['á', (n) => n.startsWith('á')],
    ['🦊', (n) => n.startsWith('🦊')],
    ['🦊🦊', (n) => n.startsWith('🦊🦊')],
    ['alpha and more', () => false],
  ];
  for (const [prefix, keep] of cases) {
    it(`name_prefix=${prefix}: exactly the names starting with it, case-sensitive, wildcards plain`, async () => {
      const expected = all.filter((r) => keep(r.name)).map((r) => r.id);
      const base = `/v1/resources?name_prefix=${encodeURIComponent(prefix)}`;
      for (const limit of [1, 3, 100]) {
        expect(await walkCursor(base, limit)).toEqual({ ids: expected, total: expected.length });
        expect(await walkOffset(base, limit)).toEqual({ ids: expected, total: expected.length });
        expect(await walkCursor(q(base, 'order=desc'), limit)).toEqual({
          ids: [...expected].reverse(),
          total: expected.length,
        });
      }
    });
  }

  it('combines with status and type, and stays in its environment', async () => {
    const expected = all.filter((r) => r.name.startsWith('al') && r.status === 'active' && r.type === 'standard');
    const p = await page('/v1/resources?name_prefix=al&status=active&type=standard&limit=100');
    expect(p.data.map((r) => r.id)).toEqual(expected.map((r) => r.id));
    expect(p.meta.total).toBe(expected.length);
    const test = await page('/v1/resources?name_prefix=alpha', ws.test);
    expect(test.meta.total).toBe(1);
  });

  for (const bad of ['name_prefix=', `name_prefix=${'x'.repeat(256)}`, 'name_prefix=a&name_prefix=b']) {
    it(`?${bad.slice(0, 40)} → 400 on name_prefix`, async () => {
      const res = await t.request({ method: 'GET', url: `/v1/resources?${bad}`, key: ws.live });
      expectValidation(res, { field: 'name_prefix' });
    });
  }
});
