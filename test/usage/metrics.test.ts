import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';

// Backends: sqlite — the Prometheus text of the process's own counters
// Tier: quick

const TOKEN = 'metrics-token-0123456789abcdef';

// docs/operations.md#metrics: Prometheus text, served only with METRICS_TOKEN set and only to its bearer.
describe('GET /metrics', () => {
  let t: TestApp;
  let off: TestApp;
  beforeAll(async () => {
    // No timed flush: the only flush is the test's own, so the flush count is exact on a slow machine.
    t = await startTestApp({ config: { METRICS_TOKEN: TOKEN, USAGE_FLUSH_MS: 600_000 } });
    off = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
    await off?.close();
  });
  const get = (app: TestApp, authorization?: string) =>
    app.request({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });

  it('is not served without METRICS_TOKEN', async () => {
    expect((await get(off, `Bearer ${TOKEN}`)).statusCode).toBe(404);
  });

  it('needs the token', async () => {
    expect((await get(t)).statusCode).toBe(401);
    expect((await get(t, `Bearer ${TOKEN}x`)).statusCode).toBe(401);
    expect((await get(t, TOKEN)).statusCode).toBe(401);
  });

  it('serves process, HTTP, delivery and metering metrics', async () => {
    const ws = await newWorkspace(t);
    await t.request({ method: 'GET', url: '/v1/resources', key: ws.live });
    await t.request({ method: 'GET', url: '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R', key: ws.live });
    await t.services.usage.meter.flush();
    const res = await get(t, `Bearer ${TOKEN}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const text = res.body;
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
    expect(text).toMatch(/wsvc_http_requests_total\{method="GET",route="\/v1\/resources",status="200"\} 1\b/);
    expect(text).toMatch(/wsvc_http_requests_total\{method="GET",route="\/v1\/resources\/:id",status="404"\} 1\b/);
    expect(text).toContain('wsvc_http_request_duration_seconds_bucket{le="0.005",method="GET",route="/v1/resources"}');
    expect(text).toMatch(/wsvc_delivery_queue_depth 0\b/);
    expect(text).toContain('wsvc_delivery_attempts_total{outcome="succeeded"} 0');
    expect(text).toMatch(/wsvc_usage_flushes_total\{result="ok"\} 1\b/);
    expect(text).toContain('wsvc_usage_flush_lag_seconds');
  });
});
