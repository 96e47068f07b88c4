import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { createResource } from '../helpers/auth-matrix.js';

// Backends: both — the list's one statement (total and page together) is SQL on each database
// Tier: quick
// docs/performance.md#lists-in-one-statement: GET /v1/resources sends one
// statement per request (the total and the page of every start and filter shape together), and an empty page,
// an old cursor without its offset and the last page still answer what they did with two.

/**
 * The statements on resources and their counts that the pg clients of this process send (pg.Client#query, which the
 * pool and our driver call); the usage flush a timer runs meanwhile (usage counts, keys' last use) is left out.
 */
let sent = 0;
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const a = args[0] as string | { text?: string };
  if ((typeof a === 'string' ? a : (a?.text ?? '')).includes('"resource')) sent++;
  return query.apply(this, args);
} as typeof pg.Client.prototype.query;

let t: TestApp;
let ws: TestWorkspace;
const ids: string[] = [];
beforeAll(async () => {
  t = await startTestApp();
  ws = await newWorkspace(t);
  for (let i = 0; i < 7; i++) {
    const id = await createResource(t, ws.live, { name: `r${i}`, type: i % 2 === 0 ? 'standard' : 'premium' });
    if (i % 3 === 0) await t.request({ method: 'POST', url: `/v1/resources/${id}/archive`, key: ws.live });
    ids.push(id);
  }
});
afterAll(() => t.close());

type Page = { data: { id: string }[]; meta: { total: number; offset: number; next_cursor: string | null } };
async function list(url: string): Promise<Page> {
  const res = await t.request({ method: 'GET', url, key: ws.live });
  expect(res.statusCode, res.body).toBe(200);
  return json(res);
}
/** A cursor as issued before cursors carried their offset (`o`). */
const oldCursor = (after: string) => Buffer.from(JSON.stringify({ v: 1, after })).toString('base64url');
const decode = (c: string) => JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as { after: string; o?: number };

const FILTERS = ['', 'status=active&', 'type=premium&', 'status=archived&type=standard&'];

describe('GET /v1/resources in one statement', () => {
  it('an old cursor without its offset gives the same page, offset and next cursor as the one issued now', async () => {
    for (const filter of FILTERS) {
      const first = await list(`/v1/resources?${filter}limit=2`);
      if (first.meta.next_cursor === null) continue;
      const { after, o } = decode(first.meta.next_cursor);
      const now = await list(`/v1/resources?${filter}limit=2&cursor=${first.meta.next_cursor}`);
      const old = await list(`/v1/resources?${filter}limit=2&cursor=${oldCursor(after)}`);
      expect(old.data).toEqual(now.data);
      expect(old.meta).toEqual(now.meta);
      expect(now.meta.offset).toBe(o);
    }
  });

  it('an empty page still has its total: past the end by offset, after the last id, and a filter with no match', async () => {
    const last = ids.at(-1) as string;
    for (const url of [
      '/v1/resources?offset=50',
      `/v1/resources?cursor=${oldCursor(last)}`,
      `/v1/resources?status=active&cursor=${oldCursor(last)}`,
    ]) {
      const p = await list(url);
      expect(p.data).toEqual([]);
      expect(p.meta.next_cursor).toBeNull();
      expect(p.meta.total).toBeGreaterThan(0);
    }
    const p = await list(`/v1/resources?cursor=${oldCursor(last)}`);
    expect(p.meta).toMatchObject({ total: 7, offset: 7 });
    const none = await list('/v1/resources?type=custom');
    expect(none).toEqual({ data: [], meta: { total: 0, limit: 20, offset: 0, next_cursor: null } });
  });

  it('on PostgreSQL each list request sends exactly one statement, for every start and filter shape', async (ctx) => {
    if (t.storage.dialect.name !== 'postgres') ctx.skip();
    const first = await list('/v1/resources?limit=2');
    const cursor = first.meta.next_cursor as string;
    const urls = FILTERS.flatMap((f) => [
      `/v1/resources?${f}limit=2`,
      `/v1/resources?${f}limit=2&offset=3`,
      `/v1/resources?${f}limit=2&cursor=${cursor}`,
      `/v1/resources?${f}limit=2&cursor=${oldCursor(decode(cursor).after)}`,
      `/v1/resources?${f}offset=100`,
    ]);
    for (const url of urls) await list(url); // the key verified and cached, every statement prepared
    for (const url of urls) {
      const before = sent;
      await list(url);
      expect(sent - before, url).toBe(1);
    }
  });
});
