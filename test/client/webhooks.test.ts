import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkspaceClient } from '../../packages/client/src/index.js';
import { type VerifyOptions, verifyWebhook, WebhookVerificationError } from '../../packages/client/src/webhooks.js';
import type { Config } from '../../src/config.js';
import type { DeliveryWorker } from '../../src/modules/delivery-engine/delivery.worker.js';
import { newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { type Received, type Receiver, startReceiver } from '../helpers/receiver.js';
import { testWorker } from '../helpers/worker.js';

// Backends: sqlite — verifyWebhook on delivered bytes; the deliveries themselves run on both backends in test/delivery
// Tier: quick
// verifyWebhook (packages/client/src/webhooks.ts, docs/client.md) on real deliveries: the real
// worker POSTs to a real HTTP receiver on loopback; the receiver's bytes and headers are verified,
// agree with the standardwebhooks package, and any change to them is refused.
const FAST: Partial<Config> = { WEBHOOK_ALLOW_INSECURE_URLS: true, WEBHOOK_POLL_MS: 20, WEBHOOK_TIMEOUT_MS: 2000 };

let t: TestApp;
let rx: Receiver;
let worker: DeliveryWorker;
let client: WorkspaceClient;
beforeAll(async () => {
  t = await startTestApp({ config: FAST });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  rx = await startReceiver();
  worker = testWorker(t);
  worker.start();
  const ws = await newWorkspace(t);
  client = new WorkspaceClient({
    key: ws.live,
    baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`,
  });
});
afterAll(async () => {
  await worker.stop(1000);
  await rx.close();
  await t.close();
});

let n = 0;
async function hookAndDelivery(): Promise<{ secret: string; id: string; got: Received }> {
  const path = `/wh${++n}`;
  const hook = (await client.POST('/v1/webhooks', { body: { url: rx.url(path), events: ['*'] } })).data;
  await client.POST('/v1/resources', { body: { name: `R${n}`, type: 'standard' } });
  await rx.until(() => rx.to(path).length >= 1);
  const got = rx.to(path)[0] as Received;
  return { secret: hook.secret, id: hook.id, got };
}
const headersOf = (r: Received) => r.headers as Record<string, string>;
const refused = async (body: string, headers: Record<string, string>, opts: VerifyOptions) => {
  const e = await verifyWebhook(body, headers, opts).catch((x: unknown) => x);
  expect(e).toBeInstanceOf(WebhookVerificationError);
  return (e as WebhookVerificationError).code;
};

describe('verifyWebhook on real deliveries', () => {
  it('accepts a delivery as received, typed by event, as the standardwebhooks verifier does', async () => {
    const { secret, got } = await hookAndDelivery();
    const event = await verifyWebhook(got.body, headersOf(got), { secret });
    expect(event).toEqual(JSON.parse(got.body));
    expect(new Webhook(secret).verify(got.body, headersOf(got))).toEqual(event);
    // A Headers object and the raw bytes work the same.
    const asHeaders = new Headers(headersOf(got));
    expect(await verifyWebhook(new TextEncoder().encode(got.body), asHeaders, { secret })).toEqual(event);
    if (event.event !== 'resource.created') throw new Error(`unexpected ${event.event}`);
    // Narrowed by `event`: `data.resource` is a Resource.
    expect(event.data.resource.name).toMatch(/^R\d+$/);
  });

  it('refuses a changed body, a wrong secret, a changed signature, an old or future timestamp, missing headers', async () => {
    const { secret, got } = await hookAndDelivery();
    const h = headersOf(got);
    const ts = Number(h['webhook-timestamp']) * 1000;
    expect(await refused(got.body.replace('R', 'S'), h, { secret })).toBe('bad_signature');
    expect(await refused(got.body, h, { secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}` })).toBe(
      'bad_signature',
    );
    const flipped = (h['x-service-signature'] as string).replace(/^./, (c) => (c === '0' ? '1' : '0'));
    expect(await refused(got.body, { ...h, 'x-service-signature': flipped }, { secret })).toBe('bad_signature');
    expect(await refused(got.body, { ...h, 'webhook-signature': 'v1,AAAA' }, { secret })).toBe('bad_signature');
    // The signed id is part of the signature: a replay under another id fails.
    expect(await refused(got.body, { ...h, 'webhook-id': 'evt_other' }, { secret })).toBe('bad_signature');
    // Tolerance (default 300 s), on an injected clock.
    expect(await refused(got.body, h, { secret, now: () => ts + 301_000 })).toBe('timestamp_out_of_range');
    expect(await refused(got.body, h, { secret, now: () => ts - 301_000 })).toBe('timestamp_out_of_range');
    await expect(verifyWebhook(got.body, h, { secret, now: () => ts + 299_000 })).resolves.toBeDefined();
    expect(await refused(got.body, h, { secret, now: () => ts + 61_000, toleranceS: 60 })).toBe(
      'timestamp_out_of_range',
    );
    expect(await refused(got.body, { ...h, 'webhook-timestamp': 'soon' }, { secret })).toBe('invalid_timestamp');
    const { 'webhook-signature': _s, ...noStandard } = h;
    expect(await refused(got.body, noStandard, { secret })).toBe('missing_headers');
    // Without a timestamp only when asked for, and still checked.
    await expect(verifyWebhook(got.body, noStandard, { secret, requireTimestamp: false })).resolves.toBeDefined();
    expect(await refused(got.body.replace('R', 'S'), noStandard, { secret, requireTimestamp: false })).toBe(
      'bad_signature',
    );
    expect(createHmac('sha256', secret).update(got.body).digest('hex')).toBe(h['x-service-signature']);
  });

  it('during a rotation overlap a delivery verifies with the list of both secrets, and not with a stranger', async () => {
    const { secret: old, id, got: before } = await hookAndDelivery();
    const rotated = (await client.POST('/v1/webhooks/{id}/rotate-secret', { params: { path: { id } }, body: {} })).data;
    const path = new URL(rotated.url).pathname;
    const count = rx.to(path).length;
    await client.POST('/v1/webhooks/{id}/test', { params: { path: { id } } });
    await rx.until(() => rx.to(path).length > count);
    const after = rx.to(path).at(-1) as Received;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(2);
    const event = await verifyWebhook(after.body, headersOf(after), { secret: [rotated.secret, old] });
    expect(event.event).toBe('webhook.test');
    // The Standard Webhooks header alone carries a signature for each secret.
    const { 'x-service-signature': _x, ...standardOnly } = headersOf(after);
    for (const secret of [rotated.secret, old]) {
      expect(await verifyWebhook(after.body, standardOnly, { secret })).toEqual(event);
      expect(new Webhook(secret).verify(after.body, headersOf(after))).toEqual(event);
    }
    const stranger = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    expect(await refused(after.body, headersOf(after), { secret: [stranger] })).toBe('bad_signature');
    // The earlier delivery still verifies with the old secret in the list.
    await expect(
      verifyWebhook(before.body, headersOf(before), { secret: [rotated.secret, old] }),
    ).resolves.toBeDefined();
  });
});
