import { describe, expect, it } from 'vitest';
import { BUCKET_BOUNDS_MS, BUCKET_COUNT, bucketOf, quantile } from './buckets.js';
import { createUsageMeter, type UsageBatch, type UsageSample } from './meter.js';
import { loggableBody, MAX_LOGGED_BODY_BYTES } from './redact.js';

// Backends: sqlite — the in-memory usage meter with an injected writer, no storage
// Tier: quick

const sample = (over: Partial<UsageSample> = {}): UsageSample => ({
  workspaceId: 'ws_1',
  env: 'live',
  keyId: 'key_1',
  route: 'GET /v1/resources',
  status: 200,
  latencyMs: 3,
  ...over,
});

describe('usage meter (docs/usage.md)', () => {
  it('adds requests of one key, route, status and minute into one cell, with latency buckets', async () => {
    let now = Date.parse('2026-01-10T10:00:59.999Z');
    const written: UsageBatch[] = [];
    const meter = createUsageMeter({
      clock: { now: () => now },
      flushMs: 5000,
      write: async (b) => void written.push(b),
    });
    meter.record(sample({ latencyMs: 0.1 }));
    meter.record(sample({ latencyMs: 3 }));
    meter.record(sample({ status: 404 }));
    now += 1; // the next minute
    meter.record(sample());
    await meter.flush();
    expect(written).toHaveLength(1);
    const cells = written[0]?.cells ?? [];
    expect(cells.map((c) => [new Date(c.minute).toISOString(), c.status, c.count])).toEqual([
      ['2026-01-10T10:00:00.000Z', 200, 2],
      ['2026-01-10T10:00:00.000Z', 404, 1],
      ['2026-01-10T10:01:00.000Z', 200, 1],
    ]);
    expect(cells[0]?.buckets[0]).toBe(1);
    expect(cells[0]?.buckets[bucketOf(3)]).toBe(1);
    expect(written[0]?.lastUsed.get('key_1')).toBe(Date.parse('2026-01-10T10:01:00.000Z'));
    await meter.flush();
    expect(written).toHaveLength(1); // nothing new: no write
  });

  it('keeps a batch whose write failed and adds it to the next one', async () => {
    let fail = true;
    const written: UsageBatch[] = [];
    const meter = createUsageMeter({
      clock: { now: () => 0 },
      flushMs: 5000,
      write: async (b) => {
        if (fail) throw new Error('database down');
        written.push(b);
      },
    });
    meter.record(sample());
    await expect(meter.flush()).rejects.toThrow('database down');
    meter.record(sample());
    fail = false;
    await meter.flush();
    expect(written[0]?.cells[0]?.count).toBe(2);
    expect(meter.stats).toMatchObject({ flushes: 1, failedFlushes: 1 });
  });

  it('stop() writes what is left', async () => {
    const written: UsageBatch[] = [];
    const meter = createUsageMeter({
      clock: { now: () => 0 },
      flushMs: 60_000,
      write: async (b) => void written.push(b),
    });
    meter.start();
    meter.record(sample());
    await meter.stop();
    expect(written[0]?.cells[0]?.count).toBe(1);
  });
});

describe('latency buckets', () => {
  it('double from 0.25 ms, the last one open', () => {
    expect(BUCKET_COUNT).toBe(16); // migration 010 has b0..b15
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(0.25)).toBe(0);
    expect(bucketOf(0.26)).toBe(1);
    expect(bucketOf(1)).toBe(2);
    expect(bucketOf(4096)).toBe(14);
    expect(bucketOf(4097)).toBe(15);
    expect(bucketOf(1e9)).toBe(15);
    for (let i = 0; i < BUCKET_BOUNDS_MS.length; i++) expect(bucketOf(BUCKET_BOUNDS_MS[i] as number)).toBe(i);
  });

  it('give percentiles within their bucket', () => {
    const b = new Array(BUCKET_COUNT).fill(0);
    b[bucketOf(3)] = 90; // (2, 4]
    b[bucketOf(100)] = 10; // (64, 128]
    expect(quantile(b, 0.5)).toBeGreaterThan(2);
    expect(quantile(b, 0.5)).toBeLessThanOrEqual(4);
    expect(quantile(b, 0.99)).toBeGreaterThan(64);
    expect(quantile(b, 0.99)).toBeLessThanOrEqual(128);
    expect(quantile(new Array(BUCKET_COUNT).fill(0), 0.5)).toBeNull();
  });
});

describe('request log bodies', () => {
  it('never keep keys or secrets, and stop at 8 KiB', () => {
    const body = loggableBody({
      name: 'x',
      password: 'hunter22',
      metadata: { api_key: 'abc', note: 'my key is svc_live_AbCdEf0123456789 and whsec_c2VjcmV0' },
    });
    expect(body).not.toMatch(/hunter22|svc_live_AbC|whsec_c2V|"abc"/);
    expect(body).toContain('[redacted]');
    const long = loggableBody({ name: 'é'.repeat(10_000) }) as string;
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(MAX_LOGGED_BODY_BYTES);
    expect(long).not.toContain('\uFFFD');
    expect(loggableBody(undefined)).toBeNull();
    // As received, even when it is not JSON: secret members and values go all the same.
    const raw = loggableBody('{"name":"x","Password":"hunter22","key":"abc", "note":"svc_test_AbCdEf0123456789"');
    expect(raw).toBe('{"name":"x","Password":"[redacted]","key":"[redacted]", "note":"[redacted]"');
  });
});

describe('unflushed billable counts (docs/billing.md#the-free-cap)', () => {
  it('counts live answers other than 429 and 5xx until a flush commits them; a failed flush keeps them', async () => {
    const now = Date.parse('2026-01-10T10:00:30.000Z');
    let release: (() => void) | undefined;
    let fail = false;
    const meter = createUsageMeter({
      clock: { now: () => now },
      flushMs: 5000,
      trackBillable: true,
      write: () =>
        new Promise<void>((resolve, reject) => {
          release = fail ? () => reject(new Error('down')) : resolve;
        }),
    });
    for (const status of [200, 404, 429, 500, 503]) meter.record(sample({ status }));
    meter.record(sample({ env: 'test' }));
    meter.record(sample({ workspaceId: 'ws_2' }));
    const minute = Date.parse('2026-01-10T10:00:00.000Z');
    expect(meter.unflushedBillable('ws_1', minute)).toBe(2);
    expect(meter.unflushedBillable('ws_1', minute + 60_000)).toBe(0); // counted before `from`
    expect(meter.generation()).toBe(0);
    const flushing = meter.flush();
    meter.record(sample());
    expect(meter.unflushedBillable('ws_1', minute)).toBe(3); // 2 being written + 1 new
    release?.();
    await flushing;
    expect(meter.generation()).toBe(1);
    expect(meter.unflushedBillable('ws_1', minute)).toBe(1);
    fail = true;
    const failing = meter.flush();
    release?.();
    await expect(failing).rejects.toThrow('down');
    expect(meter.generation()).toBe(1);
    expect(meter.unflushedBillable('ws_1', minute)).toBe(1);
  });
});
