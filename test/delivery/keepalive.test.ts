import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { testWorker } from '../helpers/worker.js';

// Backends: sqlite — the sender's retry of a reset kept-alive socket; how attempts are recorded runs on both backends in test/delivery/delivery.test.ts
// Tier: quick
// The keep-alive race (docs/api.md#webhook-deliveries): a receiver closes an idle kept-alive socket just
// as the worker writes the next delivery to it. The receiver here makes that race certain instead
// of likely: it destroys the connection when a request arrives on a connection chosen by the
// test, before answering, so the sender sees ECONNRESET ("socket hang up") without a response,
// exactly as when the close and the request cross. Real worker, real HTTP, real database.

let t: TestApp;
let worker: DeliveryWorker;
const servers: http.Server[] = [];
beforeAll(async () => {
  t = await startTestApp({
    config: { WEBHOOK_ALLOW_INSECURE_URLS: true, WEBHOOK_MAX_RETRIES: 0, WEBHOOK_TIMEOUT_MS: 5000 },
  });
  worker = testWorker(t, { listen: false });
});
afterAll(async () => {
  await worker.stop(1000);
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
  await t.close();
});

/**
 * A receiver that keeps connections alive for a minute and, for each request, asks `resetIf(connection
 * number from 1, request number on that connection from 1)` whether to destroy the connection instead
 * of answering.
 */
async function resettingReceiver(resetIf: (connection: number, request: number) => boolean) {
  const perSocket = new WeakMap<Socket, { connection: number; requests: number }>();
  let connections = 0;
  const log: { connection: number; request: number; reset: boolean; webhookId: string }[] = [];
  const server = http.createServer((req, res) => {
    const s = perSocket.get(req.socket) ?? { connection: ++connections, requests: 0 };
    s.requests++;
    perSocket.set(req.socket, s);
    const reset = resetIf(s.connection, s.requests);
    log.push({ connection: s.connection, request: s.requests, reset, webhookId: String(req.headers['webhook-id']) });
    if (reset) {
      req.socket.destroy();
      return;
    }
    req.resume();
    req.on('end', () => res.writeHead(200).end('ok'));
  });
  server.keepAliveTimeout = 60_000;
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, log };
}

/** A webhook in a workspace of its own, so that each test's events reach only its receiver. */
async function webhookTo(url: string): Promise<{ ws: TestWorkspace; id: string }> {
  const ws = await newWorkspace(t);
  const res = await t.request({
    method: 'POST',
    url: '/v1/webhooks',
    key: ws.live,
    body: { url, events: ['resource.created'] },
  });
  expect(res.statusCode, res.body).toBe(201);
  return { ws, id: json(res).data.id as string };
}

interface Detail {
  status: string;
  attempt_count: number;
  event_id: string;
  attempts: { response_status: number | null; error: string | null }[];
}
/** Records one event in the webhook's workspace, runs the worker once and answers the delivery of `id`. */
async function deliverOne({ ws, id }: { ws: TestWorkspace; id: string }): Promise<Detail> {
  const res = await t.request({
    method: 'POST',
    url: '/v1/resources',
    key: ws.live,
    body: { name: 'R', type: 'standard' },
  });
  expect(res.statusCode, res.body).toBe(201);
  await worker.runOnce();
  const list = await t.request({ method: 'GET', url: `/v1/webhooks/${id}/deliveries?limit=100`, key: ws.live });
  const newest = (json(list).data as { id: string; created_at: string }[]).sort((a, b) =>
    b.created_at.localeCompare(a.created_at),
  )[0];
  const detail = await t.request({ method: 'GET', url: `/v1/webhooks/${id}/deliveries/${newest?.id}`, key: ws.live });
  expect(detail.statusCode, detail.body).toBe(200);
  return json(detail).data as Detail;
}

describe('a reset on a kept-alive socket', () => {
  it('on a reused socket: retried once at once on a fresh connection, one attempt recorded, succeeded', async () => {
    // The second request of the first connection is reset; every other request is answered.
    const rx = await resettingReceiver((connection, request) => connection === 1 && request === 2);
    const hook = await webhookTo(rx.url);
    const first = await deliverOne(hook);
    expect(first.status).toBe('succeeded');

    const second = await deliverOne(hook);
    expect(second).toMatchObject({ status: 'succeeded', attempt_count: 1 });
    expect(second.attempts).toHaveLength(1);
    expect(second.attempts[0]).toMatchObject({ response_status: 200, error: null });
    // The reset really happened on the reused connection, and the retry came on a new one.
    expect(rx.log.map(({ connection, request, reset }) => ({ connection, request, reset }))).toEqual([
      { connection: 1, request: 1, reset: false },
      { connection: 1, request: 2, reset: true },
      { connection: 2, request: 1, reset: false },
    ]);
    expect(rx.log[1]?.webhookId).toBe(second.event_id);
    expect(rx.log[2]?.webhookId).toBe(second.event_id);
  });

  it('on a fresh socket: a failed attempt, not retried', async () => {
    const rx = await resettingReceiver(() => true);
    const hook = await webhookTo(rx.url);
    const d = await deliverOne(hook);
    expect(d).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect(d.attempts).toHaveLength(1);
    expect(d.attempts[0]?.response_status).toBeNull();
    expect(d.attempts[0]?.error).toMatch(/ECONNRESET/);
    expect(rx.log).toHaveLength(1);
  });

  it('on a reused socket and again on the fresh one: one failed attempt, retried only once', async () => {
    // Only the very first request is answered.
    const rx = await resettingReceiver((connection, request) => connection > 1 || request > 1);
    const hook = await webhookTo(rx.url);
    expect((await deliverOne(hook)).status).toBe('succeeded');
    const d = await deliverOne(hook);
    expect(d).toMatchObject({ status: 'failed', attempt_count: 1 });
    expect(d.attempts).toHaveLength(1);
    expect(d.attempts[0]?.error).toMatch(/ECONNRESET/);
    expect(rx.log.map(({ connection, request }) => [connection, request])).toEqual([
      [1, 1],
      [1, 2],
      [2, 1],
    ]);
  });
});
