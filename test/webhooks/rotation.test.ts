import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { json, newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — the secrets' overlap is stored and compared to the millisecond
// Tier: quick
// Secret rotation seen by the receiver of docs/using.md (docs/api.md#webhooks): through the overlap,
// X-Service-Signature stays keyed with the old secret and webhook-signature carries both; from
// the millisecond the old secret expires, only the new one signs. The clock is injected and stands
// still unless the test moves it, so "just before" and "at" the expiry are exact; the deliveries
// are real HTTP to that receiver run as printed, in its own process.

let now = Date.now();
const clock = { now: () => now };
let t: TestApp;
let worker: DeliveryWorker;
let dir: string;
beforeAll(async () => {
  t = await startTestApp({ config: { WEBHOOK_ALLOW_INSECURE_URLS: true, WEBHOOK_TIMEOUT_MS: 5000 }, clock });
  worker = testWorker(t, { clock, listen: false });
  dir = mkdtempSync(join(tmpdir(), 'wsvc-readme-rx-'));
  writeFileSync(join(dir, 'receiver.mjs'), readmeReceiver());
});
afterAll(async () => {
  await worker.stop(1000);
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The receiver of docs/using.md that needs no client ("verify `X-Service-Signature` on the raw body"), listening on a free port instead of 3000. */
function readmeReceiver(): string {
  const readme = readFileSync(new URL('../../docs/using.md', import.meta.url), 'utf8');
  const from = readme.indexOf('verify `X-Service-Signature` on the raw body');
  const block = /```js\n([\s\S]*?)```/.exec(readme.slice(from));
  const code = block?.[1] ?? '';
  expect(code).toContain('.listen(3000);');
  return code.replace(
    '.listen(3000);',
    ".listen(0, '127.0.0.1', function () { console.log('PORT ' + this.address().port); });",
  );
}

interface ReadmeRx {
  url: string;
  /** What it printed for each accepted event: `<event id> <event type> …`. */
  lines: string[];
  close(): Promise<void>;
}
async function startReadmeRx(secretEnv: string): Promise<ReadmeRx> {
  const child: ChildProcess = spawn(process.execPath, [join(dir, 'receiver.mjs')], {
    env: { PATH: process.env.PATH, WEBHOOK_SECRET: secretEnv },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    let buf = '';
    child.once('exit', (code) => reject(new Error(`README receiver exited (${code})`)));
    child.stdout?.on('data', (c: Buffer) => {
      buf += c.toString('utf8');
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const m = /^PORT (\d+)$/.exec(line);
        if (m) resolve(Number(m[1]));
        else lines.push(line);
      }
    });
  });
  return {
    url: `http://127.0.0.1:${port}/hook`,
    lines,
    close: () =>
      new Promise<void>((r) => {
        if (child.exitCode !== null) return r();
        child.once('exit', () => r());
        child.kill();
      }),
  };
}

const post = (key: string, url: string, body?: unknown) => t.request({ method: 'POST', url, key, body });
async function get(key: string, url: string) {
  const res = await t.request({ method: 'GET', url, key });
  expect(res.statusCode, res.body).toBe(200);
  return json(res);
}
async function pointAt(ws: TestWorkspace, id: string, rx: ReadmeRx) {
  const res = await t.request({ method: 'PATCH', url: `/v1/webhooks/${id}`, key: ws.live, body: { url: rx.url } });
  expect(res.statusCode, res.body).toBe(200);
}

interface Attempt {
  response_status: number | null;
  error: string | null;
  request_headers: Record<string, string>;
}
/** One event, delivered by the worker at the clock's current time; answers its only attempt and the event body. */
async function deliverOne(ws: TestWorkspace, id: string): Promise<{ attempt: Attempt; eventId: string; body: string }> {
  const before = new Set(
    ((await get(ws.live, `/v1/webhooks/${id}/deliveries?limit=100`)).data as { id: string }[]).map((d) => d.id),
  );
  const res = await post(ws.live, '/v1/resources', { name: 'R', type: 'standard' });
  expect(res.statusCode, res.body).toBe(201);
  expect(await worker.runOnce()).toBe(1);
  const list = (await get(ws.live, `/v1/webhooks/${id}/deliveries?limit=100`)).data as { id: string }[];
  const fresh = list.filter((d) => !before.has(d.id));
  expect(fresh).toHaveLength(1);
  const detail = (await get(ws.live, `/v1/webhooks/${id}/deliveries/${fresh[0]?.id}`)).data;
  expect(detail.attempts).toHaveLength(1);
  const event = (await get(ws.live, `/v1/events/${detail.event_id}`)).data;
  return { attempt: detail.attempts[0], eventId: detail.event_id, body: JSON.stringify(event) };
}

const hex = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');
/** Verifies the Standard Webhooks headers as a receiver whose clock agrees with the injected one. */
function standardVerifies(secret: string, body: string, headers: Record<string, string>): boolean {
  vi.useFakeTimers({ toFake: ['Date'], now });
  try {
    new Webhook(secret).verify(body, headers);
    return true;
  } catch {
    return false;
  } finally {
    vi.useRealTimers();
  }
}

describe('secret rotation and the README receiver', () => {
  it('the old secret keys X-Service-Signature until the exact expiry, then the new one', async () => {
    const ws = await newWorkspace(t);
    const created = await post(ws.live, '/v1/webhooks', {
      url: 'http://127.0.0.1:9/unused',
      events: ['resource.created'],
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id, secret: oldSecret } = json(created).data as { id: string; secret: string };
    const receivers: ReadmeRx[] = [];
    const rx = async (secrets: string) => {
      const r = await startReadmeRx(secrets);
      receivers.push(r);
      return r;
    };
    try {
      // The README receiver with the secret of the creation response.
      const oldOnly = await rx(oldSecret);
      await pointAt(ws, id, oldOnly);
      const first = await deliverOne(ws, id);
      expect(first.attempt.response_status).toBe(204);
      expect(oldOnly.lines.some((l) => l.startsWith(`${first.eventId} resource.created`))).toBe(true);

      const rotated = await post(ws.live, `/v1/webhooks/${id}/rotate-secret`, { expire_old_in_s: 3600 });
      expect(rotated.statusCode, rotated.body).toBe(200);
      const { secret: newSecret, previous_secret_expires_at: expiresAt } = json(rotated).data;
      const expiry = Date.parse(expiresAt);
      expect(expiry).toBe(now + 3600_000);

      // 1 ms before the expiry: the receiver that knows only the old secret still accepts.
      now = expiry - 1;
      expect((await get(ws.live, `/v1/webhooks/${id}`)).data.previous_secret_expires_at).toBe(expiresAt);
      const before = await deliverOne(ws, id);
      expect(before.attempt.response_status).toBe(204);
      expect(oldOnly.lines.some((l) => l.startsWith(`${before.eventId} resource.created`))).toBe(true);
      const h1 = before.attempt.request_headers;
      expect(h1['x-service-signature']).toBe(hex(oldSecret, before.body));
      expect(h1['webhook-signature']?.split(' ')).toHaveLength(2);
      expect(standardVerifies(oldSecret, before.body, h1)).toBe(true);
      expect(standardVerifies(newSecret, before.body, h1)).toBe(true);

      // Given both secrets during the overlap, it accepts on either side of the expiry.
      const withBoth = await rx(`${newSecret} ${oldSecret}`);
      await pointAt(ws, id, withBoth);
      expect((await deliverOne(ws, id)).attempt.response_status).toBe(204);

      // At the expiry: only the new secret signs, in both headers.
      now = expiry;
      expect((await get(ws.live, `/v1/webhooks/${id}`)).data.previous_secret_expires_at).toBeNull();
      const at = await deliverOne(ws, id);
      expect(at.attempt.response_status).toBe(204);
      expect(withBoth.lines.some((l) => l.startsWith(`${at.eventId} resource.created`))).toBe(true);
      const h2 = at.attempt.request_headers;
      expect(h2['x-service-signature']).toBe(hex(newSecret, at.body));
      expect(h2['webhook-signature']?.split(' ')).toHaveLength(1);
      expect(standardVerifies(newSecret, at.body, h2)).toBe(true);
      expect(standardVerifies(oldSecret, at.body, h2)).toBe(false);

      // And the receiver left with the old secret alone now refuses: the old secret really stopped.
      now = expiry + 1;
      await pointAt(ws, id, oldOnly);
      const after = await deliverOne(ws, id);
      expect(after.attempt.response_status).toBe(400);
      expect(after.attempt.request_headers['x-service-signature']).toBe(hex(newSecret, after.body));
    } finally {
      for (const r of receivers) await r.close();
    }
  });
});
