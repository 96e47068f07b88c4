import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';

// Backends: both — the lists that page through src/db/keyset.ts (users, events, webhooks, deliveries, keys)
// answer the same pages on each database; on PostgreSQL each is one statement
// Tier: quick
// docs/performance.md#lists-in-one-statement: the total and the page of a list go to PostgreSQL as one
// statement (the counts a one-row table, the page left-joined to it); SQLite keeps the two. The pages, an empty one,
// an old cursor without its offset and newest first answer what they did.

/** The statements of this process's pg clients that count a list (the one statement carries `wsvc_total`). */
const sent = { counts: 0, joined: 0 };
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const a = args[0] as string | { text?: string };
  const text = typeof a === 'string' ? a : (a?.text ?? '');
  if (text.includes('count(*)')) sent.counts++;
  if (text.includes('wsvc_total')) sent.joined++;
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

let t: TestApp;
let ws: TestWorkspace;
const onPostgres = () => t.storage.dialect.name === 'postgres';
beforeAll(async () => {
  t = await startTestApp();
  ws = await newWorkspace(t);
  for (let i = 0; i < 4; i++) await ws.member('viewer');
  for (let i = 0; i < 5; i++) await createResource(t, ws.live, { name: `r${i}`, type: 'standard' });
});
afterAll(() => t.close());

type Page = { data: { id: string }[]; meta: { total: number; offset: number; next_cursor: string | null } };
/** One list request, and how many statements counted it. */
async function list(url: string): Promise<{ page: Page; counts: number; joined: number }> {
  const before = { ...sent };
  const res = await t.request({ method: 'GET', url, key: ws.live });
  expect(res.statusCode, res.body).toBe(200);
  return { page: json(res), counts: sent.counts - before.counts, joined: sent.joined - before.joined };
}
/** A cursor as issued before cursors carried their offset (`o`). */
const oldCursor = (after: string) => Buffer.from(JSON.stringify({ v: 1, after })).toString('base64url');

describe.each(['/v1/users', '/v1/events'])('%s pages', (path) => {
  let all: string[];
  beforeAll(async () => {
    all = (await list(`${path}?limit=100`)).page.data.map((r) => r.id);
    expect(all.length).toBeGreaterThanOrEqual(5);
  });

  it('first page, offset page, cursor page, old cursor and newest first: the same records, total and offset', async () => {
    const first = await list(`${path}?limit=2`);
    expect(first.page.data.map((r) => r.id)).toEqual(all.slice(0, 2));
    expect(first.page.meta.total).toBe(all.length);

    const offset = await list(`${path}?limit=2&offset=1`);
    expect(offset.page.data.map((r) => r.id)).toEqual(all.slice(1, 3));
    expect(offset.page.meta).toMatchObject({ total: all.length, offset: 1 });

    const cursor = first.page.meta.next_cursor as string;
    const next = await list(`${path}?limit=2&cursor=${cursor}`);
    expect(next.page.data.map((r) => r.id)).toEqual(all.slice(2, 4));
    expect(next.page.meta).toMatchObject({ total: all.length, offset: 2 });

    const old = await list(`${path}?limit=2&cursor=${oldCursor(all[1] as string)}`);
    expect(old.page.data.map((r) => r.id)).toEqual(all.slice(2, 4));
    expect(old.page.meta).toMatchObject({ total: all.length, offset: 2 });

    const desc = await list(`${path}?limit=2&order=desc`);
    expect(desc.page.data.map((r) => r.id)).toEqual([...all].reverse().slice(0, 2));

    const empty = await list(`${path}?limit=2&offset=${all.length + 5}`);
    expect(empty.page.data).toEqual([]);
    expect(empty.page.meta).toMatchObject({ total: all.length, next_cursor: null });

    for (const r of [first, offset, next, old, desc, empty]) {
      if (onPostgres()) {
        // One statement: the counts joined to the page, and nothing else counted.
        expect(r.joined).toBe(1);
        expect(r.counts).toBe(1);
      } else {
        expect(r.joined + r.counts).toBe(0);
      }
    }
  });

  it('records carry no column of the counts', async () => {
    const { page } = await list(`${path}?limit=2`);
    for (const row of page.data) expect(Object.keys(row)).not.toContain('wsvc_total');
  });
});

describe('/v1/resources newest first or by name prefix (pageById, the total from the maintained counts or counted)', () => {
  it('answers the pages of the oldest-first list reversed or filtered, each in one statement on PostgreSQL', async () => {
    const all = (await list('/v1/resources?limit=100')).page.data.map((r) => r.id);
    const newest = [...all].reverse();
    const first = await list('/v1/resources?limit=2&order=desc');
    expect(first.page.data.map((r) => r.id)).toEqual(newest.slice(0, 2));
    expect(first.page.meta.total).toBe(all.length);
    const next = await list(`/v1/resources?limit=2&order=desc&cursor=${first.page.meta.next_cursor}`);
    expect(next.page.data.map((r) => r.id)).toEqual(newest.slice(2, 4));
    expect(next.page.meta).toMatchObject({ total: all.length, offset: 2 });
    const offset = await list('/v1/resources?limit=2&order=desc&offset=3');
    expect(offset.page.data.map((r) => r.id)).toEqual(newest.slice(3, 5));
    const prefixed = await list('/v1/resources?limit=2&name_prefix=r1');
    expect(prefixed.page.data).toHaveLength(1);
    expect(prefixed.page.meta.total).toBe(1);
    const none = await list('/v1/resources?limit=2&order=desc&type=custom');
    expect(none.page.data).toEqual([]);
    expect(none.page.meta.total).toBe(0);
    for (const r of [first, next, offset, prefixed, none]) expect(r.joined).toBe(onPostgres() ? 1 : 0);
  });
});
