import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf } from '../helpers/audit.js';

// Backends: sqlite — the request's address as Fastify computes it; storage plays no part
// Tier: quick
// docs/api.md#audit-log: behind a trusted proxy (TRUST_PROXY) an entry's ip is the forwarded client's
// address, as Fastify's request.ip; its request_id is the answer's X-Request-Id (an incoming one echoed).

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ config: { TRUST_PROXY: '1' } });
});
afterAll(() => t.close());

describe('the origin of an entry', () => {
  it("names the forwarded client's address, the request id and the user agent", async () => {
    const ws = await newWorkspace(t);
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name: 'x', type: 'standard' },
      headers: {
        'x-forwarded-for': '198.51.100.9, 203.0.113.7',
        'x-request-id': 'trace-123',
        'user-agent': 'proxy-test',
      },
    });
    expect(res.statusCode).toBe(201);
    const [entry] = await entriesOf(t, ws.id);
    expect(entry).toMatchObject({ ip: '203.0.113.7', request_id: 'trace-123', user_agent: 'proxy-test' });
  });
});
