// Backends: both — the failed-request log is written by the meter's flush to request_log and read back over HTTP
// Tier: quick
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';

// docs/usage.md#request-log: what the log never keeps. Secrets pasted where an id belongs (the path),
// URL user-info in any body value, and the values of members named like a secret, whatever their type.
describe('request log redaction (docs/usage.md#request-log)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { USAGE_FLUSH_MS: 600_000 } });
  });
  afterAll(() => t?.close());

  /** Every column of every row of the request log, as one string. */
  const everything = async () => JSON.stringify(await t.storage.db.selectFrom('request_log').selectAll().execute());
  const logged = async (key: string, requestId: string) => {
    await t.services.usage.meter.flush();
    const res = await t.request({ method: 'GET', url: `/v1/requests?request_id=${requestId}`, key });
    expect(res.statusCode, res.body).toBe(200);
    const [entry] = json(res).data;
    expect(entry, `no log entry for ${requestId}`).toBeDefined();
    return entry as { path: string; body: string | null; status: number };
  };

  it('a key, a webhook secret or a token pasted into the path is not kept', async () => {
    const ws = await newWorkspace(t);
    const secret = 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTIzNA==';
    const token = randomBytes(32).toString('base64url'); // a session or link token: 43 characters
    const cases: [string, string][] = [
      [`/v1/keys/${ws.test}`, '/v1/keys/[redacted]'],
      [`/v1/keys/${ws.live}/roll`, '/v1/keys/[redacted]/roll'],
      [`/v1/webhooks/${encodeURIComponent(secret)}`, '/v1/webhooks/[redacted]'],
      [`/v1/resources/${token}`, '/v1/resources/[redacted]'],
    ];
    for (const [url, expected] of cases) {
      const method = url.endsWith('/roll') ? 'POST' : 'GET';
      const res = await t.request({ method, url, key: ws.live });
      expect(res.statusCode, url).toBe(404);
      const entry = await logged(ws.live, String(res.headers['x-request-id']));
      expect(entry.path).toBe(expected);
    }
    const all = await everything();
    for (const s of [ws.test, ws.live.slice(9), 'c2VjcmV0c2Vj', token]) expect(all).not.toContain(s);
  });

  it('the query string is never kept', async () => {
    const ws = await newWorkspace(t);
    const res = await t.request({ method: 'GET', url: `/v1/resources?limit=0&note=${ws.test}`, key: ws.live });
    expect(res.statusCode).toBe(400);
    const entry = await logged(ws.live, String(res.headers['x-request-id']));
    expect(entry.path).toBe('/v1/resources');
    expect(await everything()).not.toContain(ws.test);
  });

  it('URL user-info in a body is kept as [redacted], in valid and in broken JSON', async () => {
    const ws = await newWorkspace(t);
    const url = 'https://ada:S3cretPw@hooks.example.com/in';
    const refused = await t.request({
      method: 'POST',
      url: '/v1/webhooks',
      key: ws.live,
      body: { url, events: ['*'] },
    });
    expect(refused.statusCode).toBe(400);
    const entry = await logged(ws.live, String(refused.headers['x-request-id']));
    expect(entry.body).toContain('https://[redacted]@hooks.example.com/in');
    const broken = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      headers: { 'content-type': 'application/json' },
      body: '{"name":"x","metadata":{"src":"ftp://root:Hunter2Pw@files.example.com/a", "tok":"https://ghp0123456789abcdef@git.example.com"',
    });
    expect(broken.statusCode).toBe(400);
    const brokenEntry = await logged(ws.live, String(broken.headers['x-request-id']));
    expect(brokenEntry.body).toBe(
      '{"name":"x","metadata":{"src":"ftp://[redacted]@files.example.com/a", "tok":"https://[redacted]@git.example.com"',
    );
    const all = await everything();
    for (const s of ['S3cretPw', 'ada:', 'Hunter2Pw', 'root:', 'ghp0123456789abcdef']) expect(all).not.toContain(s);
  });

  it('members named like a secret lose their value, whatever its type; other members stay', async () => {
    const ws = await newWorkspace(t);
    const secrets = {
      pwd: 'v-pwd-1',
      passwd: 'v-passwd-1',
      private_key: 'v-private-key-1',
      client_secret: 'v-client-secret-1',
      access_token: 'v-access-token-1',
      refresh_token: 'v-refresh-token-1',
      apiKey: 'v-api-key-1',
      'X-Api-Key': 'v-x-api-key-1',
      sessionId: 'v-session-1',
      Cookie: 'v-cookie-1',
      passphrase: 'v-passphrase-1',
      pin_code: 1234987,
      credentials: { user: 'v-user-1', pass: 'v-pass-1' },
      otp: ['v-otp-1'],
    };
    const body = { name: 'Broken', type: 'huge', passport: 'P-123', monkey: 'kept-1', ...secrets };
    const res = await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body });
    expect(res.statusCode).toBe(400);
    const entry = await logged(ws.live, String(res.headers['x-request-id']));
    const kept = JSON.parse(entry.body as string);
    for (const name of Object.keys(secrets)) expect(kept[name], name).toBe('[redacted]');
    expect(kept).toMatchObject({ name: 'Broken', type: 'huge', passport: 'P-123', monkey: 'kept-1' });
    const all = await everything();
    for (const v of ['v-pwd', 'v-passwd', 'v-private', 'v-client', 'v-access', 'v-refresh', 'v-api', 'v-x-api'])
      expect(all).not.toContain(v);
    for (const v of ['v-session', 'v-cookie', 'v-passphrase', '1234987', 'v-user', 'v-pass-1', 'v-otp'])
      expect(all).not.toContain(v);
  });
});
