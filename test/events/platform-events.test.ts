import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Value } from '@sinclair/typebox/value';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { EVENT_DATA, type EventType } from '../../src/modules/events/events.schemas.js';
import { ResourceSchema } from '../../src/modules/resources/resources.schemas.js';
import { json, startTestApp, type TestApp } from '../helpers/app.js';
import { ORIGIN, signInWithLink } from '../helpers/console.js';
import { valueSecrets } from '../helpers/event-secrets.js';
import { type Received, type Receiver, startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';
import { adminOf } from '../helpers/two-factor.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — the events are written by the outbox in each change's transaction and delivered by the worker
// Tier: full — a `wsvc` child process (over a second of CPU to start) and every door of the catalogue
// Platform events (docs/api.md#platform-events) made through their real doors — the HTTP API, the console, the
// delivery worker, the periodic jobs and the `wsvc` command — each received exactly once at a real HTTP receiver
// and verified with the published `standardwebhooks` package; none carries a secret.
const exec = promisify(execFile);
const PLANS = {
  plans: [
    {
      id: 'free',
      name: 'Free',
      base_price_cents: 0,
      included_requests: 1_000,
      hard_cap: true,
      overage_unit_requests: null,
      overage_unit_price_cents: null,
      max_resources: 100,
      max_webhooks: 16,
    },
  ],
};

let storage: Awaited<ReturnType<typeof openTestStorage>>;
let t: TestApp;
let rx: Receiver;
let databaseUrl: string;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-plans-'));
  const file = join(dir, 'plans.json');
  writeFileSync(file, JSON.stringify(PLANS));
  storage = await openTestStorage();
  t = await startTestApp({
    storage,
    config: {
      WEBHOOK_ALLOW_INSECURE_URLS: true,
      WEBHOOK_MAX_RETRIES: 0,
      USAGE_FLUSH_MS: 600_000,
      PLANS_FILE: file,
      PUBLIC_URL: ORIGIN,
    },
  });
  rx = await startReceiver();
  const schema = storage.schema;
  databaseUrl = schema ? `${storage.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}` : storage.url;
});
afterAll(async () => {
  await rx?.close();
  await t?.close();
  await storage?.close();
});

const job = (id: string) => t.services.uow.as(systemActor(`scheduler:${id}`));

/** `n` billable live requests now, written by a real flush of the meter. */
async function use(workspaceId: string, n: number) {
  for (let i = 0; i < n; i++) {
    t.services.usage.meter.record({
      workspaceId,
      env: 'live',
      keyId: 'key_x',
      route: 'GET /v1/users/me',
      status: 200,
      latencyMs: 1,
    });
  }
  await t.services.usage.meter.flush();
}

async function drain() {
  const worker = testWorker(t, { listen: false });
  while ((await worker.runOnce()) > 0) {}
  await worker.stop(1000);
}

describe('platform events through their real doors', { timeout: 240_000 }, () => {
  it('every producible type reaches a subscribed endpoint exactly once, signed, with its own data and no secret', async () => {
    const a = await adminOf(t, 'Platform events');
    const ws = a.ws;
    const adminKey = await t.services.keyRegistry.create(t.services.uow.as(systemActor('cli')), {
      userId: a.userId,
      env: 'live',
      name: 'admin',
      scopes: null,
    });
    const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
      t.request({ method, url, key: adminKey.key, body });
    const hook = async (path: string, events: string[]) => {
      const res = await api('POST', '/v1/webhooks', { url: rx.url(path), events });
      expect(res.statusCode, res.body).toBe(201);
      return json(res).data as { id: string; secret: string };
    };
    // `main` takes everything; `toggle` too, and is disabled and enabled; `dead` answers 500 to what it takes.
    const main = await hook('/main', ['*']);
    const toggle = await hook('/toggle', ['*']);
    rx.plan('/dead', [{ status: 500 }]);
    const dead = await hook('/dead', ['resource.created']);
    const expected: Partial<Record<EventType, number>> = {};
    const expect1 = (type: EventType, n = 1) => {
      expected[type] = (expected[type] ?? 0) + n;
    };

    // HTTP API: keys.
    const created = await api('POST', '/v1/keys', { name: 'CI', env: 'live', scopes: ['resources:read'] });
    expect(created.statusCode, created.body).toBe(201);
    const keyId = json(created).data.id as string;
    expect1('key.created');
    const rolled = await api('POST', `/v1/keys/${keyId}/roll`, { expire_old_in_s: 3600 });
    expect(rolled.statusCode, rolled.body).toBe(201);
    expect1('key.rolled');
    const successor = json(rolled).data.id as string;
    expect((await api('DELETE', `/v1/keys/${successor}`)).statusCode).toBe(204);
    expect1('key.revoked');
    // A test key's events go to test endpoints only: nothing here.
    expect((await api('POST', '/v1/keys', { name: 'sandbox', env: 'test' })).statusCode).toBe(201);
    // Job: a key that stops working within 7 days (the rolled one was told by key.rolled).
    const soon = new Date(Date.now() + 3 * 86_400_000).toISOString();
    expect((await api('POST', '/v1/keys', { name: 'short', env: 'live', expires_at: soon })).statusCode).toBe(201);
    expect1('key.created');
    expect(await t.services.keyRegistry.notifyExpiring(job('key-expiry-notices'))).toBeGreaterThanOrEqual(1);
    expect1('key.expiring');

    // Console: members.
    const invited = await a.client.call({
      method: 'POST',
      url: '/console/api/members',
      ws,
      body: { email: `joiner-${Date.now()}@example.test`, role: 'viewer', name: 'Joiner' },
    });
    expect(invited.statusCode, invited.body).toBe(201);
    expect1('member.invited');
    const memberId = json(invited).data.user_id as string;
    await signInWithLink(t, json(invited).data.invite_url as string);
    expect1('member.joined');
    const role = await a.client.call({
      method: 'PATCH',
      url: `/console/api/members/${memberId}`,
      ws,
      body: { role: 'member' },
    });
    expect(role.statusCode, role.body).toBe(200);
    expect1('member.role_changed');
    expect((await a.client.call({ method: 'DELETE', url: `/console/api/members/${memberId}`, ws })).statusCode).toBe(
      204,
    );
    expect1('member.removed');
    // GET /v1/events lists them with its type filter (before the usage below reaches the plan's hard cap).
    const listed = json(await api('GET', '/v1/events?event=member.joined')).data as { event: string; data: unknown }[];
    expect(listed.map((e) => e.event)).toEqual(['member.joined']);
    expect(listed[0]?.data).toMatchObject({ member: { id: memberId, role: 'viewer', name: 'Joiner' } });

    // HTTP API: an endpoint disabled and enabled by hand; the others hear of it, never the endpoint itself.
    expect((await api('POST', `/v1/webhooks/${toggle.id}/disable`)).statusCode).toBe(200);
    expect1('webhook.disabled');
    expect((await api('POST', `/v1/webhooks/${toggle.id}/enable`)).statusCode).toBe(200);
    expect1('webhook.enabled');

    // Worker: a delivery that used its only attempt; a resend that fails again tells nothing more.
    expect((await api('POST', '/v1/resources', { name: 'r', type: 'standard' })).statusCode).toBe(201);
    await drain();
    expect1('delivery.exhausted');
    const deadDeliveries = json(await api('GET', `/v1/webhooks/${dead.id}/deliveries`)).data as {
      id: string;
      status: string;
    }[];
    expect(deadDeliveries.map((d) => d.status)).toEqual(['failed']);
    const retried = await api('POST', `/v1/webhooks/${dead.id}/deliveries/${deadDeliveries[0]?.id}/retry`);
    expect(retried.statusCode, retried.body).toBeLessThan(300);
    await drain();

    // Job: usage at 50, 80 and 100 % of the included requests (the plan's hard cap), each once, run twice.
    const billable = async () => (await t.services.billing.subscriptionOf(ws)).usage.billable_requests;
    await use(ws, 0);
    await use(ws, 500 - (await billable()));
    await t.services.billing.notifyUsage(job('billing-usage-notices'));
    await t.services.billing.notifyUsage(job('billing-usage-notices'));
    await use(ws, 300);
    await t.services.billing.notifyUsage(job('billing-usage-notices'));
    await use(ws, 200);
    await t.services.billing.notifyUsage(job('billing-usage-notices'));
    await t.services.billing.notifyUsage(job('billing-usage-notices'));
    expect1('usage.threshold', 3);
    expect1('usage.cap_reached');

    // Job: the invoice of a period that ended (the subscription set a month back, as if made then).
    const monthAgo = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await storage.db
      .updateTable('subscriptions')
      .set({ anchor_at: monthAgo, started_at: monthAgo })
      .where('workspace_id', '=', ws)
      .execute();
    expect(await t.services.billing.finalizeDue(job('billing-invoices'))).toBeGreaterThanOrEqual(1);
    expect1('invoice.finalized');
    const invoices = await storage.db.selectFrom('invoices').select('id').where('workspace_id', '=', ws).execute();
    expect(invoices.length).toBeGreaterThanOrEqual(1);

    // CLI: the invoice marked paid by the operator, in a `wsvc` child process.
    const paid = await exec(process.execPath, ['bin/wsvc.js', 'billing', 'mark-paid', invoices[0]?.id as string], {
      env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
    });
    expect(paid.stdout).toContain('paid');
    expect1('invoice.payment_succeeded');

    await drain();

    // Every platform event at `main`: verified by the published verifier, once each, of its own shape, no secret.
    const verify = (r: Received, secret: string) =>
      new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as {
        id: string;
        event: EventType;
        data: unknown;
      };
    const events = rx.to('/main').map((r) => verify(r, main.secret));
    const ids = events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    const platform = events.filter((e) => !e.event.startsWith('resource.'));
    const counts: Partial<Record<EventType, number>> = {};
    for (const e of platform) {
      counts[e.event] = (counts[e.event] ?? 0) + 1;
      expect(Value.Errors(EVENT_DATA[e.event], [ResourceSchema], e.data).First(), e.event).toBeUndefined();
      expect(valueSecrets(e.data), e.event).toEqual([]);
    }
    expect(counts).toEqual(expected);
    // Where they went: the key's environment (the test key told no live endpoint), each threshold once.
    const thresholds = platform
      .filter((e) => e.event === 'usage.threshold')
      .map((e) => (e.data as { threshold: number }).threshold);
    expect(thresholds.sort()).toEqual([100, 50, 80].sort());
    const keyNames = platform
      .filter((e) => e.event === 'key.created')
      .map((e) => (e.data as { key: { name: string } }).key.name);
    expect(keyNames.sort()).toEqual(['CI', 'short']);
    const roll = platform.find((e) => e.event === 'key.rolled')?.data as {
      key: { expires_at: string };
      old_expires_at: string;
    };
    expect(roll.key.expires_at).toBe(roll.old_expires_at);
    const exhausted = platform.find((e) => e.event === 'delivery.exhausted')?.data;
    expect(exhausted).toMatchObject({ webhook_id: dead.id, event_type: 'resource.created', last_response_status: 500 });
    const toggled = platform.filter((e) => e.event.startsWith('webhook.')).map((e) => e.data);
    expect(toggled).toEqual([
      expect.objectContaining({ webhook_id: toggle.id, reason: 'manual' }),
      expect.objectContaining({ webhook_id: toggle.id }),
    ]);

    // The toggled endpoint never heard of its own disable or enable; the dead one never of its own exhaustion.
    const toToggle = rx.to('/toggle').map((r) => verify(r, toggle.secret));
    expect(toToggle.filter((e) => e.event === 'webhook.disabled' || e.event === 'webhook.enabled')).toEqual([]);
    expect(toToggle.filter((e) => e.event === 'delivery.exhausted')).toHaveLength(1);
    const toDead = rx.to('/dead').map((r) => verify(r, dead.secret));
    expect(new Set(toDead.map((e) => e.event))).toEqual(new Set(['resource.created']));
  });
});
