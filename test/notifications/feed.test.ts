import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { asCli, json, startTestApp, type TestApp } from '../helpers/app.js';
import { type ConsoleClient, ORIGIN, signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';

// Backends: both — the feed, its cursor, read marks and purge are SQL
// Tier: quick
// The console's notification feed (docs/notifications.md#the-feed): GET /console/api/notifications
// (newest first, cursor paging, unread count) and POST /console/api/notifications/read, on real
// notifications written by real changes, an injected clock, and the 90-day purge job at its boundary.

// Console sign-ins and password changes hash with scrypt (at the suite's lower cost, vitest.config.ts; several per test here): on a loaded 2-core machine that outgrows the default 30 s.
vi.setConfig({ testTimeout: 120_000 });

const DAY = 24 * 3_600_000;
let nowMs = Date.parse('2026-05-01T08:00:00.000Z');
const clock = { now: () => nowMs };
let t: TestApp;
let admin: ConsoleClient;
let other: ConsoleClient;
let ws: string;
let adminKey: string;
let adminId: string;
beforeAll(async () => {
  t = await startTestApp({ clock, config: { PUBLIC_URL: ORIGIN } });
  const out = await t.services.workspaces.create(asCli(t.services), {
    name: 'Feed',
    adminEmail: 'feed.admin@example.test',
  });
  ws = out.workspace.id;
  adminKey = out.keys.live.key;
  adminId = out.user.id;
  admin = await signInWithLink(t, out.set_password_url);
  const second = await t.services.workspaces.create(asCli(t.services), {
    name: 'Other',
    adminEmail: 'feed.other@example.test',
  });
  other = await signInWithLink(t, second.set_password_url);
});
afterAll(() => t.close());

const feed = (c: ConsoleClient, query = '', workspace = ws) =>
  c.call({ method: 'GET', url: `/console/api/notifications${query}`, ws: workspace });
const read = (c: ConsoleClient, body: unknown, workspace = ws) =>
  c.call({ method: 'POST', url: '/console/api/notifications/read', ws: workspace, body });

/** Makes `n` keys a minute apart (one key.created each for the admin); returns their names, oldest first. */
async function keys(n: number, prefix: string): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < n; i++) {
    nowMs += 60_000;
    const name = `${prefix} ${i}`;
    const res = await t.request({ method: 'POST', url: '/v1/keys', key: adminKey, body: { name, env: 'live' } });
    expect(res.statusCode, res.body).toBe(201);
    names.push(name);
  }
  return names;
}

describe('the notification feed', () => {
  it('newest first with cursor paging and the unread count; invite and reset emails are not in it', async () => {
    const names = await keys(5, 'Feed key');
    // An account email (a reset link) for the same person: never in the feed.
    await t.services.consoleAuth.forgotPassword('feed.admin@example.test');
    const first = await feed(admin, '?limit=2');
    expect(first.statusCode, first.body).toBe(200);
    const body = json(first);
    expect(body.meta.unread_count).toBe(5);
    expect(body.data.map((i: { title: string }) => i.title)).toEqual([
      expect.stringContaining(`API key created: ${names[4]} (live,`),
      expect.stringContaining(`API key created: ${names[3]} (live,`),
    ]);
    expect(body.data[0]).toMatchObject({ category: 'security', type: 'key.created', read_at: null });
    expect(body.data[0].created_at).toBe(new Date(nowMs).toISOString());
    const seen = [...body.data];
    let cursor = body.meta.next_cursor as string | null;
    while (cursor) {
      const page = json(await feed(admin, `?limit=2&cursor=${cursor}`));
      seen.push(...page.data);
      cursor = page.meta.next_cursor;
    }
    expect(seen.map((i) => i.data.key.name)).toEqual([...names].reverse());
    expect(new Set(seen.map((i) => i.id)).size).toBe(5);
    // Another person's feed in their own workspace holds none of these.
    expect(
      json(
        await feed(
          other,
          '',
          json(await other.call({ method: 'GET', url: '/console/api/session' })).data.memberships[0].workspace_id,
        ),
      ).data,
    ).toEqual([]);
  });

  it('mark read by ids and all; others’ ids change nothing; bad input is a 400 with nothing changed', async () => {
    const before = json(await feed(admin)).meta.unread_count as number;
    await keys(3, 'Read key');
    const items = json(await feed(admin, '?limit=3')).data as { id: string; read_at: string | null }[];
    expect(json(await feed(admin)).meta.unread_count).toBe(before + 3);

    nowMs += 1000;
    const one = await read(admin, { ids: [items[0]?.id] });
    expect(one.statusCode, one.body).toBe(200);
    expect(json(one).data.unread_count).toBe(before + 2);
    const after = json(await feed(admin, '?limit=3')).data;
    expect(after[0].read_at).toBe(new Date(nowMs).toISOString());
    expect(after[1].read_at).toBeNull();
    // Marking it again, or someone else marking it (they act in their workspace), changes nothing.
    expect(json(await read(admin, { ids: [items[0]?.id] })).data.unread_count).toBe(before + 2);
    const otherWs = json(await other.call({ method: 'GET', url: '/console/api/session' })).data.memberships[0]
      .workspace_id;
    expect((await read(other, { ids: [items[1]?.id] }, otherWs)).statusCode).toBe(200);
    // Acting in a workspace one is not a member of: 404.
    expectError(await read(other, { ids: [items[1]?.id] }), 404, 'not_found');

    for (const bad of [
      {},
      { all: true, ids: [items[1]?.id] },
      { ids: [] },
      { ids: ['key_01JQ8Z6Y9W3E5R7T9Y1U3I5O7P'] },
      { all: false },
      { all: true, extra: 1 },
    ]) {
      expectError(await read(admin, bad), 400, 'validation_error');
    }
    for (const q of ['?limit=0', '?limit=101', '?cursor=nope', '?cursor=ntf_01', '?sort=asc']) {
      expectError(await feed(admin, q), 400, 'validation_error');
    }
    expect(json(await feed(admin)).meta.unread_count).toBe(before + 2);

    const all = await read(admin, { all: true });
    expect(json(all).data.unread_count).toBe(0);
    expect(
      json(await feed(admin, '?limit=100')).data.every((i: { read_at: string | null }) => i.read_at !== null),
    ).toBe(true);
  });

  it('session only: no cookie is 401, a POST without the CSRF token 403, an API key is not a session', async () => {
    expect(
      (await t.request({ method: 'GET', url: '/console/api/notifications', headers: { 'x-workspace-id': ws } }))
        .statusCode,
    ).toBe(401);
    const noCsrf = await t.request({
      method: 'POST',
      url: '/console/api/notifications/read',
      body: { all: true },
      headers: { cookie: admin.cookie, origin: ORIGIN, 'x-workspace-id': ws },
    });
    expectError(noCsrf, 403, 'csrf_failed');
    const withKey = await t.request({
      method: 'GET',
      url: '/console/api/notifications',
      key: adminKey,
      headers: { 'x-workspace-id': ws },
    });
    expect(withKey.statusCode).toBe(401);
    expectError(await admin.call({ method: 'GET', url: '/console/api/notifications' }), 400, 'validation_error');
  });

  it('kept 90 days: the purge job deletes a notification 90 days and 1 ms after it was written, not before', async () => {
    const [name] = await keys(1, 'Old key');
    const written = nowMs;
    const purge = t.services.jobs.find((j) => j.id === 'purge-notifications');
    if (!purge) throw new Error('no purge job');
    // The same instant for the key's notification and every earlier one is older: those go first.
    nowMs = written + 90 * DAY;
    await purge.run();
    // (The console session has long expired by then: read the rows the feed reads.)
    const titles = async () =>
      (await t.services.notifications.ofUser(ws, adminId)).map((r) => JSON.parse(r.data).key?.name);
    expect(await titles()).toContain(name);
    nowMs = written + 90 * DAY + 1;
    expect(await purge.run()).toBeGreaterThanOrEqual(1);
    expect(await titles()).not.toContain(name);
  });
});
