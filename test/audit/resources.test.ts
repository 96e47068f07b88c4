import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf, keyIdOf, newEntries } from '../helpers/audit.js';

// Backends: both — each entry is written in the change's transaction and read back from storage
// Tier: quick
// docs/api.md#audit-log: every resource change through the API records exactly one entry naming the key,
// its user, the target and only the changed fields, with the request's id, address and user agent;
// a refused change, a change that changes nothing and one rolled back at commit record nothing.

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('resource changes through the API', () => {
  it('records created, updated, archived, unarchived and deleted, each once, with its actor and changes', async () => {
    const ws = await newWorkspace(t);
    const keyId = await keyIdOf(t, ws.live);
    const created = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name: 'Report', type: 'standard', metadata: { team: 'a' } },
      headers: { 'user-agent': 'audit-test/1.0' },
    });
    expect(created.statusCode).toBe(201);
    const id = json(created).data.id;
    let [entry, ...rest] = await entriesOf(t, ws.id);
    expect(rest).toEqual([]);
    expect(entry).toMatchObject({
      seq: 2,
      actor: { type: 'key', id: keyId, name: 'Default live key', user_id: ws.adminId },
      action: 'resource.created',
      target: { type: 'resource', id },
      env: 'live',
      changes: {
        name: { before: null, after: 'Report' },
        type: { before: null, after: 'standard' },
        status: { before: null, after: 'active' },
        metadata: { before: null, after: { team: 'a' } },
      },
      request_id: created.headers['x-request-id'],
      ip: '127.0.0.1',
      user_agent: 'audit-test/1.0',
    });

    const put = await t.request({ method: 'PUT', url: `/v1/resources/${id}`, key: ws.live, body: { name: 'Q3' } });
    expect(put.statusCode).toBe(200);
    [entry] = await newEntries(t, ws.id, 1);
    expect(entry).toMatchObject({
      action: 'resource.updated',
      target: { type: 'resource', id },
      changes: { name: { before: 'Report', after: 'Q3' } },
    });
    expect(Object.keys(entry?.changes ?? {})).toEqual(['name']);

    // The same values again: nothing changed, nothing recorded.
    await t.request({ method: 'PUT', url: `/v1/resources/${id}`, key: ws.live, body: { name: 'Q3' } });
    expect(await newEntries(t, ws.id, 2)).toEqual([]);

    expect((await t.request({ method: 'POST', url: `/v1/resources/${id}/archive`, key: ws.live })).statusCode).toBe(
      200,
    );
    // A repeated archive answers 200 and changes nothing.
    expect((await t.request({ method: 'POST', url: `/v1/resources/${id}/archive`, key: ws.live })).statusCode).toBe(
      200,
    );
    expect((await t.request({ method: 'POST', url: `/v1/resources/${id}/unarchive`, key: ws.live })).statusCode).toBe(
      200,
    );
    const statusEntries = await newEntries(t, ws.id, 2);
    expect(statusEntries.map((e) => [e.action, e.changes])).toEqual([
      ['resource.archived', { status: { before: 'active', after: 'archived' } }],
      ['resource.unarchived', { status: { before: 'archived', after: 'active' } }],
    ]);

    expect((await t.request({ method: 'DELETE', url: `/v1/resources/${id}`, key: ws.live })).statusCode).toBe(204);
    expect((await t.request({ method: 'DELETE', url: `/v1/resources/${id}`, key: ws.live })).statusCode).toBe(404);
    const deleted = await newEntries(t, ws.id, 4);
    expect(deleted).toHaveLength(1);
    expect(deleted[0]).toMatchObject({
      action: 'resource.deleted',
      target: { type: 'resource', id },
      changes: { name: { before: 'Q3', after: null }, status: { before: 'active', after: null } },
    });
    expect((await entriesOf(t, ws.id)).map((e) => e.seq)).toEqual([2, 3, 4, 5, 6]);
  });

  it("names a test key's environment and a console-less member's key", async () => {
    const ws = await newWorkspace(t);
    const member = await ws.member('member');
    const before = (await entriesOf(t, ws.id)).length;
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: member.test,
      body: { name: 'x', type: 'standard' },
    });
    expect(res.statusCode).toBe(201);
    const [entry] = await newEntries(t, ws.id, before);
    expect(entry).toMatchObject({
      env: 'test',
      actor: { type: 'key', id: await keyIdOf(t, member.test), name: 'test key', user_id: member.userId },
    });
  });

  it('a refused change (400, 404, 403) records nothing', async () => {
    const ws = await newWorkspace(t);
    const viewer = await ws.member('viewer');
    // The set-up's own entries (the viewer's keys, made as an operator would): the refusals add none.
    const before = (await entriesOf(t, ws.id)).length;
    const refused = [
      await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: '' } }),
      await t.request({
        method: 'PUT',
        url: '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
        key: ws.live,
        body: { name: 'x' },
      }),
      await t.request({
        method: 'POST',
        url: '/v1/resources',
        key: viewer.live,
        body: { name: 'x', type: 'standard' },
      }),
    ];
    expect(refused.map((r) => r.statusCode)).toEqual([400, 404, 403]);
    expect(await newEntries(t, ws.id, before)).toEqual([]);
  });

  it('a change rolled back at commit (its key ended meanwhile) records nothing', async () => {
    const ws = await newWorkspace(t);
    const check = t.services.checks.api_key;
    t.services.checks.api_key = async () => false;
    try {
      const res = await t.request({
        method: 'POST',
        url: '/v1/resources',
        key: ws.live,
        body: { name: 'x', type: 'standard' },
      });
      expect(res.statusCode).toBe(401);
    } finally {
      t.services.checks.api_key = check;
    }
    expect(await entriesOf(t, ws.id)).toEqual([]);
    expect(await t.storage.db.selectFrom('resources').select('id').where('workspace_id', '=', ws.id).execute()).toEqual(
      [],
    );
  });
});
