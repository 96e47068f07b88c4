import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { startReceiver } from '../helpers/receiver.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — retry times are stored and claimed at exact boundaries
// Tier: quick
// docs/operations.md the retry schedule under a controlled clock, and the webhook URL check on the address actually dialled.

describe('retry schedule under a controlled clock (docs/api.md#webhook-deliveries)', () => {
  let now = Date.parse('2026-11-22T10:00:00.000Z');
  const clock = { now: () => now };
  let t: TestApp;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    // Defaults of docs/api.md#webhook-deliveries: base 30 s, factor 4, 5 retries; only the receiver's address needs the override.
    t = await startTestApp({ clock, config: { WEBHOOK_ALLOW_INSECURE_URLS: true } });
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx.close();
    await t.close();
  });

  it('retries at 30 s, 2 min, 8 min, 32 min, 2 h 8 min after each failure, then fails', async () => {
    const worker = testWorker(t, { clock, random: () => 0.5 }); // jitter factor 1: the plain schedule
    const ws = await newWorkspace(t);
    rx.plan('/down', [{ status: 503 }]);
    const hook = json(
      await t.request({
        method: 'POST',
        url: '/v1/webhooks',
        key: ws.live,
        body: { url: rx.url('/down'), events: ['*'] },
      }),
    ).data;
    await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: 'x', type: 'standard' } });
    const due = async () => {
      const d = await t.storage.db
        .selectFrom('deliveries')
        .selectAll()
        .where('webhook_id', '=', hook.id)
        .executeTakeFirstOrThrow();
      return d;
    };
    const start = now;
    expect(await worker.runOnce()).toBe(1);
    const expectedDelays = [30_000, 120_000, 480_000, 1_920_000, 7_680_000];
    let last = start;
    for (const delay of expectedDelays) {
      const d = await due();
      expect(d.status).toBe('pending');
      expect(Date.parse(d.next_attempt_at ?? '')).toBe(last + delay);
      now = last + delay - 1;
      expect(await worker.runOnce()).toBe(0); // not due 1 ms early
      now = last + delay;
      expect(await worker.runOnce()).toBe(1);
      last = now;
    }
    const final = await due();
    expect(final).toMatchObject({ status: 'failed', attempt_count: 6, next_attempt_at: null, lease_until: null });
    now += 24 * 3600 * 1000;
    expect(await worker.runOnce()).toBe(0);
    expect(rx.to('/down')).toHaveLength(6);
    const attempts = json(
      await t.request({ method: 'GET', url: `/v1/webhooks/${hook.id}/deliveries/${final.id}`, key: ws.live }),
    ).data.attempts;
    expect(attempts.map((a: { attempted_at: string }) => Date.parse(a.attempted_at) - start)).toEqual([
      0, 30_000, 150_000, 630_000, 2_550_000, 10_230_000,
    ]);
  });
});

describe('webhook URL rules at delivery (docs/api.md#webhook-urls): the dialled address is checked (no DNS rebinding)', () => {
  let t: TestApp;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    // At creation "localhost" resolves to a public address (what a rebinding DNS server would answer
    // then); at delivery the real resolver answers 127.0.0.1. The guard is on (the default).
    t = await startTestApp({ resolveHost: async () => ['93.184.216.34'], config: { WEBHOOK_MAX_RETRIES: 0 } });
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx.close();
    await t.close();
  });

  it('a name that resolves to loopback at delivery time is never dialled', async () => {
    const worker = testWorker(t);
    const ws = await newWorkspace(t);
    const created = await t.request({
      method: 'POST',
      url: '/v1/webhooks',
      key: ws.live,
      body: { url: `https://localhost:${rx.port}/rebound`, events: ['*'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: 'x', type: 'standard' } });
    expect(await worker.runOnce()).toBe(1);
    const d = json(
      await t.request({ method: 'GET', url: `/v1/webhooks/${json(created).data.id}/deliveries`, key: ws.live }),
    ).data[0];
    expect(d.status).toBe('failed');
    expect(d.last_error).toMatch(/blocked.*127\.0\.0\.1|blocked.*::1/);
    expect(rx.connections).toBe(0);
  });

  it('literal private addresses and http:// stored earlier (e.g. under the development setting) are refused at dial time', async () => {
    const worker = testWorker(t);
    const ws = await newWorkspace(t);
    const urls = [
      `https://127.0.0.1:${rx.port}/a`,
      `https://[::ffff:127.0.0.1]:${rx.port}/b`,
      `http://127.0.0.1:${rx.port}/c`,
    ];
    const ids: string[] = [];
    for (const [i, url] of urls.entries()) {
      const res = await t.request({
        method: 'POST',
        url: '/v1/webhooks',
        key: ws.live,
        body: { url: `https://hook${i}.example/x`, events: ['*'] },
      });
      const id = json(res).data.id as string;
      await t.storage.db.updateTable('webhooks').set({ url }).where('id', '=', id).execute();
      ids.push(id);
    }
    await t.request({ method: 'POST', url: '/v1/resources', key: ws.live, body: { name: 'x', type: 'standard' } });
    expect(await worker.runOnce()).toBe(3);
    for (const id of ids) {
      const d = json(await t.request({ method: 'GET', url: `/v1/webhooks/${id}/deliveries`, key: ws.live })).data[0];
      expect(d.status).toBe('failed');
      expect(d.last_error).toMatch(/blocked|https/);
    }
    expect(rx.connections).toBe(0);
  });
});
