import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf } from '../helpers/audit.js';

// Backends: both — reads back every entry the journey stored
// Tier: quick
// docs/api.md#audit-log: after a journey of API changes (keys created, rolled and revoked, webhooks created and
// rotated, resources, profiles), no entry holds a key's plaintext or digest, nor a webhook secret.

const HOOK_URL = 'https://93.184.216.34/hooks/secrets';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('no secret in the audit log', () => {
  it('holds no key plaintext, key digest or webhook secret after a journey of changes', async () => {
    const ws = await newWorkspace(t);
    const secrets: string[] = [ws.live, ws.test];
    const send = async (method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, body?: unknown, key = ws.live) => {
      const res = await t.request({ method, url, key, body });
      expect(res.statusCode, res.body).toBeLessThan(300);
      return res.body === '' ? undefined : json(res).data;
    };
    const k1 = await send('POST', '/v1/keys', { name: 'one', env: 'live' });
    secrets.push(k1.key);
    const rolled = await send('POST', `/v1/keys/${k1.id}/roll`, { expire_old_in_s: 0 });
    secrets.push(rolled.key);
    const k2 = await send('POST', '/v1/keys', { name: 'two', env: 'test' });
    secrets.push(k2.key);
    await send('DELETE', `/v1/keys/${k2.id}`);
    const hook = await send('POST', '/v1/webhooks', { url: HOOK_URL, events: ['resource.created'] });
    secrets.push(hook.secret);
    const rotated = await send('POST', `/v1/webhooks/${hook.id}/rotate-secret`, { expire_old_in_s: 60 });
    secrets.push(rotated.secret);
    await send('PATCH', `/v1/webhooks/${hook.id}`, { events: ['*'] });
    const res = await send('POST', '/v1/resources', { name: 'n', type: 'standard', metadata: { a: 'b' } });
    await send('PUT', `/v1/resources/${res.id}`, { metadata: { a: 'c' } });
    await send('PATCH', '/v1/users/me', { name: 'Grace' }, rolled.key);
    await send('DELETE', `/v1/webhooks/${hook.id}`);

    const entries = await entriesOf(t, ws.id);
    expect(entries.length).toBeGreaterThanOrEqual(10);
    const all = JSON.stringify(entries);
    for (const s of secrets) {
      expect(all).not.toContain(s);
      expect(all).not.toContain(createHash('sha256').update(s).digest('hex'));
    }
    expect(all).not.toMatch(/whsec_|svc_live_|svc_test_/);
    // The raw rows too (the hash column is the chain's, not a key's digest).
    const rows = await t.storage.db.selectFrom('audit_entries').selectAll().where('workspace_id', '=', ws.id).execute();
    const raw = JSON.stringify(rows);
    for (const s of secrets) expect(raw).not.toContain(s);
    expect(raw).not.toMatch(/whsec_|svc_live_|svc_test_/);
  });
});
