import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { keyIdOf } from '../helpers/audit.js';
import { createResource } from '../helpers/auth-matrix.js';
import { expectError, expectValidation } from '../helpers/expect.js';

// Backends: both — the filters, the environment rule and the cursor are SQL on each database
// Tier: quick
// docs/api.md#audit-log: GET /v1/audit-log, newest first, for admins only (scope audit:read); a key sees its
// environment's entries and the workspace-level ones; filters by actor, action (exact or prefix), target,
// environment and period; cursor paging.

const T0 = Date.parse('2026-11-10T12:00:00.000Z');
let now = T0;
let t: TestApp;
let ws: TestWorkspace;
let member: Awaited<ReturnType<TestWorkspace['member']>>;
const live: string[] = [];
let testResource: string;

beforeAll(async () => {
  t = await startTestApp({ clock: { now: () => now } });
  ws = await newWorkspace(t);
  member = await ws.member('member');
  for (let i = 0; i < 3; i++) {
    now = T0 + i * 60_000; // 12:00, 12:01, 12:02
    live.push(await createResource(t, ws.live, { name: `r${i}`, type: 'standard' }));
  }
  now = T0 + 3 * 60_000;
  testResource = await createResource(t, ws.test, { name: 'sandbox', type: 'standard' });
  now = T0 + 4 * 60_000;
  await t.request({ method: 'POST', url: `/v1/resources/${live[0]}/archive`, key: member.live });
  now = T0 + 5 * 60_000;
  await t.request({ method: 'PATCH', url: '/v1/users/me', key: ws.live, body: { name: 'Ada' } });
  // Another workspace's entries never show.
  await createResource(t, (await newWorkspace(t)).live);
});
afterAll(() => t.close());

async function list(query = '', key = ws.live) {
  const res = await t.request({ method: 'GET', url: `/v1/audit-log${query}`, key });
  expect(res.statusCode, res.body).toBe(200);
  return json(res) as {
    data: { seq: number; action: string; env: string | null; target: { id: string } }[];
    meta: { total: number; next_cursor: string | null };
  };
}

describe('GET /v1/audit-log', () => {
  it('lists newest first: a live key sees live and workspace-level entries, a test key the test ones and those', async () => {
    const all = await list();
    // 2 and 3: the member's live and test keys, made through the operator's door (the CLI's) in the set-up.
    expect(all.data.map((e) => [e.seq, e.action, e.env])).toEqual([
      [9, 'user.updated', null],
      [8, 'resource.archived', 'live'],
      [6, 'resource.created', 'live'],
      [5, 'resource.created', 'live'],
      [4, 'resource.created', 'live'],
      [2, 'key.created', 'live'],
      [1, 'workspace.created', null],
    ]);
    expect(all.meta.total).toBe(7);
    const test = await list('', ws.test);
    expect(test.data.map((e) => [e.seq, e.action, e.env, e.target.id])).toEqual([
      [9, 'user.updated', null, ws.adminId],
      [7, 'resource.created', 'test', testResource],
      [3, 'key.created', 'test', member.testKeyId],
      [1, 'workspace.created', null, ws.id],
    ]);
  });

  it('filters by action (exact or a prefix ending in "."), target, actor, environment and period', async () => {
    expect((await list('?action=resource.created')).data.map((e) => e.seq)).toEqual([6, 5, 4]);
    expect((await list('?action=resource.')).data.map((e) => e.seq)).toEqual([8, 6, 5, 4]);
    expect((await list('?action=user.')).data.map((e) => e.seq)).toEqual([9]);
    expect((await list('?action=workspace.created')).data.map((e) => e.seq)).toEqual([1]);
    expect((await list(`?target_id=${live[0]}`)).data.map((e) => e.action)).toEqual([
      'resource.archived',
      'resource.created',
    ]);
    const memberKey = await keyIdOf(t, member.live);
    expect((await list(`?actor_id=${memberKey}`)).data.map((e) => e.seq)).toEqual([8]);
    expect((await list('?env=live')).data.map((e) => e.seq)).toEqual([8, 6, 5, 4, 2]);
    const from = new Date(T0 + 60_000).toISOString();
    const to = new Date(T0 + 4 * 60_000).toISOString();
    expect((await list(`?from=${from}&to=${to}`)).data.map((e) => e.seq)).toEqual([8, 6, 5]);
    expect((await list(`?from=${from}&to=${to}&action=resource.created`)).meta.total).toBe(2);
  });

  it('refuses an unknown action or a prefix without its dot (400)', async () => {
    for (const q of [
      '?action=resource.exploded',
      '?action=resource',
      '?action=nothing.',
      '?env=prod',
      '?from=yesterday',
    ]) {
      const res = await t.request({ method: 'GET', url: `/v1/audit-log${q}`, key: ws.live });
      expectValidation(res);
    }
  });

  it('pages with a cursor, newest first, to the end', async () => {
    const first = await list('?limit=3');
    expect(first.data.map((e) => e.seq)).toEqual([9, 8, 6]);
    const second = await list(`?limit=3&cursor=${first.meta.next_cursor}`);
    expect(second.data.map((e) => e.seq)).toEqual([5, 4, 2]);
    const third = await list(`?limit=3&cursor=${second.meta.next_cursor}`);
    expect(third.data.map((e) => e.seq)).toEqual([1]);
    expect(third.meta.next_cursor).toBeNull();
    expectValidation(await t.request({ method: 'GET', url: '/v1/audit-log?cursor=bm9wZQ', key: ws.live }), {
      field: 'cursor',
    });
  });

  it("is for admins: a member's key and an admin's key without audit:read get 403", async () => {
    expectError(await t.request({ method: 'GET', url: '/v1/audit-log', key: member.live }), 403, 'insufficient_scope');
    const narrow = await ws.key(ws.adminId, 'live', ['resources:read']);
    expectError(await t.request({ method: 'GET', url: '/v1/audit-log', key: narrow.key }), 403, 'insufficient_scope');
    const scoped = await ws.key(ws.adminId, 'live', ['audit:read']);
    // It sees what the admin's own key sees (the two keys just made included).
    expect((await list('', scoped.key)).data).toEqual((await list()).data);
  });

  it('records nothing for reads', async () => {
    const before = (await list()).meta.total;
    await list('?action=resource.');
    expect((await list()).meta.total).toBe(before);
  });
});
