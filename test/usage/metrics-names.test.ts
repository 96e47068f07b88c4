// Backends: both — the metrics registry reads the delivery queue depth from storage on each scrape
// Tier: quick
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

const TOKEN = 'metrics-token-0123456789abcdef';

// docs/operations.md#metrics: the standard process and Node.js series keep the names that Node.js
// dashboards and alerts query (prom-client's default metrics); only the service's own are prefixed.
describe('metric names', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ config: { METRICS_TOKEN: TOKEN } });
  });
  afterAll(() => t?.close());

  it('standard names for the standard series, wsvc_ for ours, nothing else', async () => {
    const res = await t.request({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.statusCode).toBe(200);
    const names = [...res.body.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] as string);
    // What common Node.js dashboards and alerts query.
    for (const standard of [
      'process_cpu_seconds_total',
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_eventloop_lag_seconds',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_active_handles_total',
      'nodejs_gc_duration_seconds',
      'nodejs_version_info',
    ]) {
      expect(names).toContain(standard);
    }
    expect(names.filter((n) => /^wsvc_(process|nodejs)_/.test(n))).toEqual([]);
    expect(names.filter((n) => !/^(process|nodejs)_/.test(n) && !n.startsWith('wsvc_'))).toEqual([]);
    for (const ours of ['wsvc_http_requests_total', 'wsvc_delivery_queue_depth', 'wsvc_usage_flushes_total']) {
      expect(names).toContain(ours);
    }
  });
});
