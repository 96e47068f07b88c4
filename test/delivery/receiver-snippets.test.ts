import { execFile } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import {
  SNIPPETS,
  type Snippet,
  type SnippetReceiver,
  snippetPath,
  startSnippetReceiver,
} from '../helpers/snippet-receiver.js';
import { testWorker } from '../helpers/worker.js';

// Backends: sqlite — the docs' receivers verify delivered bytes in their own processes; deliveries run on both backends in test/delivery
// Tier: full — a receiver process per snippet and language
// The receivers of docs/snippets/ (the text the console's overview shows in its setup checklist,
// docs/console.md#setup-checklist), each run as a user runs it, in its own process on a free port,
// against real deliveries made by the real worker: a valid delivery is answered 204 and printed as
// verified; a wrong secret, a tampered body, a wrong X-Service-Signature or a webhook-timestamp
// more than 5 minutes away is refused with 400; through a secret rotation's overlap a receiver
// that knows only the old secret verifies both headers, one that knows only the new secret
// verifies webhook-signature (docs/api.md#webhooks). On a port already taken, or a PORT that is not one,
// each says so in one line naming the port and how to choose another, and exits 1.

const BOTH = '(webhook-signature, X-Service-Signature)';
const MINUTE = 60_000;

let t: TestApp;
let worker: DeliveryWorker;
const running: Rx[] = [];

beforeAll(async () => {
  // No retries: a refused delivery is `failed` after its one attempt.
  t = await startTestApp({
    config: { WEBHOOK_ALLOW_INSECURE_URLS: true, WEBHOOK_MAX_RETRIES: 0, WEBHOOK_TIMEOUT_MS: 5000 },
  });
  worker = testWorker(t, { listen: false });
});
afterAll(async () => {
  for (const r of running) await r.close();
  await worker?.stop(1000);
  await t?.close();
});

type Rx = SnippetReceiver;

/** Runs a snippet file as printed, with WEBHOOK_SECRET and PORT, until it says it listens. */
async function startRx(snippet: Snippet, secret: string): Promise<Rx> {
  const rx = await startSnippetReceiver(snippet, secret);
  running.push(rx);
  return rx;
}

/** Waits for the receiver to print `line` (its output arrives through a pipe, after its answer). */
async function printed(rx: Rx, line: string): Promise<void> {
  await expect.poll(() => rx.lines, { timeout: 5000, interval: 20 }).toContain(line);
}

const randomSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

async function newEndpoint(ws: TestWorkspace): Promise<{ id: string; secret: string }> {
  const res = await t.request({
    method: 'POST',
    url: '/v1/webhooks',
    key: ws.live,
    body: { url: 'http://127.0.0.1:9/unused', events: ['resource.created'] },
  });
  expect(res.statusCode, res.body).toBe(201);
  return json(res).data;
}

async function pointAt(ws: TestWorkspace, id: string, rx: Rx): Promise<void> {
  const res = await t.request({ method: 'PATCH', url: `/v1/webhooks/${id}`, key: ws.live, body: { url: rx.url } });
  expect(res.statusCode, res.body).toBe(200);
}

interface Delivered {
  status: string;
  event_id: string;
  last_response_status: number | null;
  attempts: { response_status: number | null; request_headers: Record<string, string> }[];
}

/** A `webhook.test` delivery to the endpoint, attempted once by the worker (its clock `by`). */
async function sendTest(ws: TestWorkspace, id: string, by: DeliveryWorker = worker): Promise<Delivered> {
  const sent = await t.request({ method: 'POST', url: `/v1/webhooks/${id}/test`, key: ws.live });
  expect(sent.statusCode, sent.body).toBe(202);
  expect(await by.runOnce()).toBe(1);
  const res = await t.request({
    method: 'GET',
    url: `/v1/webhooks/${id}/deliveries/${json(sent).data.id}`,
    key: ws.live,
  });
  expect(res.statusCode, res.body).toBe(200);
  const d = json(res).data as Delivered;
  expect(d.attempts).toHaveLength(1);
  return d;
}

/** The exact body of an event, as delivered. */
async function bodyOf(ws: TestWorkspace, eventId: string): Promise<string> {
  const res = await t.request({ method: 'GET', url: `/v1/events/${eventId}`, key: ws.live });
  expect(res.statusCode, res.body).toBe(200);
  return JSON.stringify(json(res).data);
}

/** Sends a request to a receiver by hand (a replay, or one with a header changed). */
async function post(rx: Rx, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(rx.url, { method: 'POST', headers, body });
  return { status: res.status, text: await res.text() };
}

describe.each(SNIPPETS)('docs/snippets/$file ($name) against real deliveries', (snippet) => {
  it('verifies both signatures of a real delivery: 204 recorded, "verified <event id> <type>" printed', async () => {
    const ws = await newWorkspace(t);
    const hook = await newEndpoint(ws);
    const rx = await startRx(snippet, hook.secret);
    await pointAt(ws, hook.id, rx);

    const d = await sendTest(ws, hook.id);
    expect(d.status).toBe('succeeded');
    expect(d.last_response_status).toBe(204);
    await printed(rx, `verified ${d.event_id} webhook.test ${BOTH}`);

    // An event of the workspace's own, the same way.
    const made = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name: 'R', type: 'standard' },
    });
    expect(made.statusCode, made.body).toBe(201);
    expect(await worker.runOnce()).toBe(1);
    const events = await t.request({ method: 'GET', url: '/v1/events?order=desc&limit=1', key: ws.live });
    const eventId = json(events).data[0].id as string;
    await printed(rx, `verified ${eventId} resource.created ${BOTH}`);
  });

  it('refuses with 400 a wrong secret, a tampered body, a wrong X-Service-Signature and missing headers', async () => {
    const ws = await newEndpointWorkspace();
    // A receiver with another secret: the real delivery is refused, and the 400 is what the log records.
    const wrong = await startRx(snippet, randomSecret());
    await pointAt(ws.ws, ws.hook.id, wrong);
    const refused = await sendTest(ws.ws, ws.hook.id);
    expect(refused.status).toBe('failed');
    expect(refused.last_response_status).toBe(400);
    expect(refused.attempts[0]?.response_status).toBe(400);
    await printed(wrong, 'refused: webhook-signature matches no secret');

    // The right receiver, and a real delivery to it to replay by hand.
    const rx = await startRx(snippet, ws.hook.secret);
    await pointAt(ws.ws, ws.hook.id, rx);
    const good = await sendTest(ws.ws, ws.hook.id);
    expect(good.last_response_status).toBe(204);
    const body = await bodyOf(ws.ws, good.event_id);
    const sent = good.attempts[0]?.request_headers ?? {};
    const headers = {
      'content-type': 'application/json',
      'webhook-id': sent['webhook-id'] as string,
      'webhook-timestamp': sent['webhook-timestamp'] as string,
      'webhook-signature': sent['webhook-signature'] as string,
      'x-service-signature': sent['x-service-signature'] as string,
    };
    // The same bytes again, within 5 minutes: accepted (dropping repeated webhook-ids is the receiver's own job).
    expect((await post(rx, headers, body)).status).toBe(204);

    const tampered = body.replace('"webhook.test"', '"resource.deleted"');
    expect(tampered).not.toBe(body);
    expect(await post(rx, headers, tampered)).toEqual({ status: 400, text: 'webhook-signature matches no secret' });

    const otherService = createHmac('sha256', randomSecret()).update(body).digest('hex');
    expect(await post(rx, { ...headers, 'x-service-signature': otherService }, body)).toEqual({
      status: 400,
      text: 'X-Service-Signature matches no secret',
    });

    // X-Service-Signature alone carries no timestamp: without the Standard Webhooks headers, refused.
    expect(
      await post(
        rx,
        { 'content-type': 'application/json', 'x-service-signature': headers['x-service-signature'] },
        body,
      ),
    ).toEqual({ status: 400, text: 'webhook-id or webhook-timestamp is missing' });
    await printed(rx, 'refused: X-Service-Signature matches no secret');
  });

  it('refuses a real delivery whose webhook-timestamp is 6 minutes away, accepts one 4 minutes away', async () => {
    const ws = await newEndpointWorkspace();
    const rx = await startRx(snippet, ws.hook.secret);
    await pointAt(ws.ws, ws.hook.id, rx);
    // Workers whose clocks run ahead sign with their own time (the receiver has the real one).
    const at = (aheadMs: number) => testWorker(t, { listen: false, clock: { now: () => Date.now() + aheadMs } });
    const late = at(6 * MINUTE);
    const early = at(4 * MINUTE);
    try {
      const far = await sendTest(ws.ws, ws.hook.id, late);
      expect(far.last_response_status).toBe(400);
      expect(Number(far.attempts[0]?.request_headers['webhook-timestamp'])).toBeGreaterThan(Date.now() / 1000 + 5 * 60);
      await printed(rx, 'refused: webhook-timestamp is more than 5 minutes away');
      const near = await sendTest(ws.ws, ws.hook.id, early);
      expect(near.last_response_status).toBe(204);
      await printed(rx, `verified ${near.event_id} webhook.test ${BOTH}`);
    } finally {
      await late.stop(1000);
      await early.stop(1000);
    }
  });

  it('through a rotation: the old secret alone verifies both headers, the new one alone webhook-signature', async () => {
    const ws = await newEndpointWorkspace();
    const oldSecret = ws.hook.secret;
    const rotated = await t.request({
      method: 'POST',
      url: `/v1/webhooks/${ws.hook.id}/rotate-secret`,
      key: ws.ws.live,
      body: { expire_old_in_s: 3600 },
    });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const newSecret = json(rotated).data.secret as string;

    const oldOnly = await startRx(snippet, oldSecret);
    await pointAt(ws.ws, ws.hook.id, oldOnly);
    const a = await sendTest(ws.ws, ws.hook.id);
    expect(a.last_response_status).toBe(204);
    // One v1 signature per live secret; X-Service-Signature keyed with the old one (docs/api.md#webhook-event-and-delivery-details).
    expect(a.attempts[0]?.request_headers['webhook-signature']?.split(' ')).toHaveLength(2);
    await printed(oldOnly, `verified ${a.event_id} webhook.test ${BOTH}`);

    const newOnly = await startRx(snippet, newSecret);
    await pointAt(ws.ws, ws.hook.id, newOnly);
    const b = await sendTest(ws.ws, ws.hook.id);
    expect(b.last_response_status).toBe(204);
    await printed(newOnly, `verified ${b.event_id} webhook.test (webhook-signature)`);

    const both = await startRx(snippet, `${newSecret} ${oldSecret}`);
    await pointAt(ws.ws, ws.hook.id, both);
    const c = await sendTest(ws.ws, ws.hook.id);
    expect(c.last_response_status).toBe(204);
    await printed(both, `verified ${c.event_id} webhook.test ${BOTH}`);

    // Rotated again with no overlap: only the newest secret signs; the two earlier ones are refused.
    const again = await t.request({
      method: 'POST',
      url: `/v1/webhooks/${ws.hook.id}/rotate-secret`,
      key: ws.ws.live,
      body: { expire_old_in_s: 0 },
    });
    expect(again.statusCode, again.body).toBe(200);
    for (const rx of [oldOnly, newOnly]) {
      await pointAt(ws.ws, ws.hook.id, rx);
      const d = await sendTest(ws.ws, ws.hook.id);
      expect(d.last_response_status).toBe(400);
      expect(d.attempts[0]?.request_headers['webhook-signature']?.split(' ')).toHaveLength(1);
    }
    await printed(newOnly, 'refused: webhook-signature matches no secret');
  });
});

/** A fresh workspace with one endpoint (pointed at nothing yet). */
async function newEndpointWorkspace(): Promise<{ ws: TestWorkspace; hook: { id: string; secret: string } }> {
  const ws = await newWorkspace(t);
  return { ws, hook: await newEndpoint(ws) };
}

describe.each(SNIPPETS)('docs/snippets/$file ($name) when it cannot listen', (snippet) => {
  /** Runs the snippet with PORT=`port` to its end: its exit code and what it printed. */
  const run = (port: string) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(
        snippet.command,
        [snippetPath(snippet.file)],
        { env: { ...process.env, WEBHOOK_SECRET: randomSecret(), PORT: port }, timeout: 20_000 },
        (_err, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
      );
    });
  const command = snippet.file === 'receiver.mjs' ? 'node receiver.mjs' : 'python3 receiver.py';

  it('a port already taken: one line naming the port and how to choose another, exit code 1', async () => {
    // Another program on the port, on every address (as a receiver already running would be).
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, r));
    const port = (busy.address() as { port: number }).port;
    try {
      const out = await run(String(port));
      expect(out).toEqual({
        code: 1,
        stdout: '',
        stderr:
          `Port ${port} is already in use (another receiver, or another program). ` +
          `Choose another port: PORT=${port + 1} ${command}, and use it in the endpoint's URL.\n`,
      });
    } finally {
      await new Promise<void>((r) => busy.close(() => r()));
    }
  });

  it('a PORT that is not a port number: one line, exit code 1', async () => {
    expect(await run('30OO')).toEqual({
      code: 1,
      stdout: '',
      stderr: `PORT must be 0 to 65535; got "30OO". Choose another port: PORT=3001 ${command}, and use it in the endpoint's URL.\n`,
    });
  });
});
