import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf, keyIdOf, newEntries } from '../helpers/audit.js';
import { createResource } from '../helpers/auth-matrix.js';

// Backends: both — each entry is written in the change's transaction and read back from storage
// Tier: quick
// docs/api.md#audit-log: webhook, delivery, key and profile changes through the API record exactly one entry
// each, with the acting key, the target and only the changed fields; secrets appear as "[redacted]";
// refused changes and changes that change nothing record nothing.

/** A public address literal: passes the webhook URL rules without DNS; no worker runs here to dial it. */
const HOOK_URL = 'https://93.184.216.34/hooks/audit';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

async function call(key: string, method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) {
  return t.request({ method, url, key, body });
}

describe('webhooks and deliveries', () => {
  it('records each webhook change once, with the secret redacted', async () => {
    const ws = await newWorkspace(t);
    const keyId = await keyIdOf(t, ws.live);
    const created = await call(ws.live, 'POST', '/v1/webhooks', { url: HOOK_URL, events: ['*'], label: 'ops' });
    expect(created.statusCode).toBe(201);
    const hook = json(created).data;
    const [entry, ...more] = await entriesOf(t, ws.id);
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      action: 'webhook.created',
      actor: { type: 'key', id: keyId, user_id: ws.adminId },
      target: { type: 'webhook', id: hook.id },
      env: 'live',
      changes: {
        url: { before: null, after: HOOK_URL },
        events: { before: null, after: ['*'] },
        label: { before: null, after: 'ops' },
        status: { before: null, after: 'enabled' },
        secret: { before: null, after: '[redacted]' },
      },
    });

    expect((await call(ws.live, 'PATCH', `/v1/webhooks/${hook.id}`, { label: 'payments' })).statusCode).toBe(200);
    // Unchanged values: nothing recorded.
    expect((await call(ws.live, 'PATCH', `/v1/webhooks/${hook.id}`, { label: 'payments' })).statusCode).toBe(200);
    expect((await call(ws.live, 'POST', `/v1/webhooks/${hook.id}/disable`)).statusCode).toBe(200);
    expect((await call(ws.live, 'POST', `/v1/webhooks/${hook.id}/disable`)).statusCode).toBe(200);
    expect((await call(ws.live, 'POST', `/v1/webhooks/${hook.id}/enable`)).statusCode).toBe(200);
    const rotated = await call(ws.live, 'POST', `/v1/webhooks/${hook.id}/rotate-secret`, { expire_old_in_s: 3600 });
    expect(rotated.statusCode).toBe(200);
    expect((await call(ws.live, 'DELETE', `/v1/webhooks/${hook.id}`)).statusCode).toBe(204);
    expect((await call(ws.live, 'DELETE', `/v1/webhooks/${hook.id}`)).statusCode).toBe(404);

    const rest = await newEntries(t, ws.id, 1);
    expect(rest.map((e) => e.action)).toEqual([
      'webhook.updated',
      'webhook.disabled',
      'webhook.enabled',
      'webhook.secret_rotated',
      'webhook.deleted',
    ]);
    expect(rest[0]?.changes).toEqual({ label: { before: 'ops', after: 'payments' } });
    expect(rest[1]?.changes).toEqual({
      status: { before: 'enabled', after: 'disabled' },
      disabled_reason: { before: null, after: 'manual' },
    });
    expect(rest[2]?.changes).toEqual({
      status: { before: 'disabled', after: 'enabled' },
      disabled_reason: { before: 'manual', after: null },
    });
    expect(rest[3]?.changes).toMatchObject({ secret: { before: '[redacted]', after: '[redacted]' } });
    expect(rest[4]?.changes).toMatchObject({ url: { before: HOOK_URL, after: null } });
    const all = JSON.stringify(await entriesOf(t, ws.id));
    expect(all).not.toContain(hook.secret);
    expect(all).not.toContain(json(rotated).data.secret);
    expect(all).not.toContain('whsec_');
  });

  it('records a delivery retried by hand, and a bulk resend once', async () => {
    const ws = await newWorkspace(t);
    const hook = json(await call(ws.live, 'POST', '/v1/webhooks', { url: HOOK_URL, events: ['*'] })).data;
    await createResource(t, ws.live);
    await createResource(t, ws.live);
    const list = await t.request({ method: 'GET', url: `/v1/webhooks/${hook.id}/deliveries`, key: ws.live });
    const [first] = json(list).data;
    const before = (await entriesOf(t, ws.id)).length;
    const retried = await call(ws.live, 'POST', `/v1/webhooks/${hook.id}/deliveries/${first.id}/retry`);
    expect(retried.statusCode).toBe(200);
    const [entry, ...more] = await newEntries(t, ws.id, before);
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      action: 'delivery.retried',
      target: { type: 'delivery', id: first.id },
      env: 'live',
    });

    // Bulk: nothing matches (no cancelled delivery): nothing recorded; then the two pending ones are cancelled and resent.
    const since = '2020-01-01T00:00:00.000Z';
    const none = await call(ws.live, 'POST', `/v1/webhooks/${hook.id}/deliveries/retry`, {
      status: 'cancelled',
      since,
    });
    expect(json(none).data.requeued).toBe(0);
    expect(await newEntries(t, ws.id, before + 1)).toEqual([]);
    await call(ws.live, 'POST', `/v1/webhooks/${hook.id}/disable`);
    await call(ws.live, 'POST', `/v1/webhooks/${hook.id}/enable`);
    const bulk = await call(ws.live, 'POST', `/v1/webhooks/${hook.id}/deliveries/retry`, {
      status: 'cancelled',
      since,
    });
    expect(json(bulk).data.requeued).toBe(2);
    const bulkEntries = (await newEntries(t, ws.id, before + 1)).filter((e) => e.action === 'delivery.retried');
    expect(bulkEntries).toHaveLength(1);
    expect(bulkEntries[0]).toMatchObject({
      target: { type: 'webhook', id: hook.id },
      changes: { requeued: { before: null, after: 2 }, status: { before: 'cancelled', after: 'pending' } },
    });
  });
});

describe('API keys', () => {
  it('records key.created, key.rolled (one entry on the old key naming its successor) and key.revoked', async () => {
    const ws = await newWorkspace(t);
    const created = await call(ws.live, 'POST', '/v1/keys', { name: 'CI', env: 'test', scopes: ['resources:read'] });
    expect(created.statusCode).toBe(201);
    const key = json(created).data;
    const [c, ...more] = await entriesOf(t, ws.id);
    expect(more).toEqual([]);
    expect(c).toMatchObject({
      action: 'key.created',
      target: { type: 'key', id: key.id },
      env: 'test',
      actor: { type: 'key', id: await keyIdOf(t, ws.live) },
      changes: {
        name: { before: null, after: 'CI' },
        env: { before: null, after: 'test' },
        user_id: { before: null, after: ws.adminId },
        scopes: { before: null, after: ['resources:read'] },
      },
    });

    const rolled = await call(ws.live, 'POST', `/v1/keys/${key.id}/roll`, { expire_old_in_s: 60 });
    expect(rolled.statusCode).toBe(201);
    const successor = json(rolled).data;
    const [r, ...afterRoll] = await newEntries(t, ws.id, 1);
    expect(afterRoll).toEqual([]);
    expect(r).toMatchObject({
      action: 'key.rolled',
      target: { type: 'key', id: key.id },
      env: 'test',
      changes: {
        successor_id: { before: null, after: successor.id },
        expires_at: { before: null, after: successor.previous_key.expires_at },
      },
    });

    expect((await call(ws.live, 'DELETE', `/v1/keys/${successor.id}`)).statusCode).toBe(204);
    // Revoking a revoked key changes nothing.
    expect((await call(ws.live, 'DELETE', `/v1/keys/${successor.id}`)).statusCode).toBe(204);
    const revoked = await newEntries(t, ws.id, 2);
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({ action: 'key.revoked', target: { type: 'key', id: successor.id } });
    const all = JSON.stringify(await entriesOf(t, ws.id));
    expect(all).not.toContain(key.key);
    expect(all).not.toContain(successor.key);
  });

  it('a refused key change records nothing', async () => {
    const ws = await newWorkspace(t);
    const narrow = await ws.member('member', ['keys:write']);
    // The set-up's own entries (the member's keys, made as an operator would): the refusals add none.
    const before = (await entriesOf(t, ws.id)).length;
    const wider = await call(narrow.live, 'POST', '/v1/keys', { name: 'x', env: 'live', scopes: ['resources:write'] });
    expect(wider.statusCode).toBe(403);
    expect((await call(ws.live, 'POST', '/v1/keys', { name: '', env: 'live' })).statusCode).toBe(400);
    expect(await newEntries(t, ws.id, before)).toEqual([]);
  });
});

describe('PATCH /users/me', () => {
  it('records user.updated with the changed fields only; a test key writes a test change', async () => {
    const ws = await newWorkspace(t);
    expect((await call(ws.live, 'PATCH', '/v1/users/me', { name: 'Ada', timezone: 'UTC' })).statusCode).toBe(200);
    expect((await call(ws.live, 'PATCH', '/v1/users/me', { name: 'Ada' })).statusCode).toBe(200);
    expect((await call(ws.test, 'PATCH', '/v1/users/me', { timezone: 'Europe/Paris' })).statusCode).toBe(200);
    expect((await call(ws.live, 'PATCH', '/v1/users/me', { timezone: 'Mars/Base' })).statusCode).toBe(400);
    const entries = await entriesOf(t, ws.id);
    expect(entries.map((e) => [e.action, e.env, e.target, e.changes])).toEqual([
      [
        'user.updated',
        null,
        { type: 'user', id: ws.adminId },
        { name: { before: null, after: 'Ada' }, timezone: { before: null, after: 'UTC' } },
      ],
      [
        'user.updated',
        'test',
        { type: 'user', id: ws.adminId },
        { timezone: { before: 'UTC', after: 'Europe/Paris' } },
      ],
    ]);
  });
});
