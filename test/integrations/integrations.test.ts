import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { WebhooksTable } from '../../src/db/types.js';
import { systemActor } from '../../src/kernel/principal.js';
import { createSender, type Send } from '../../src/lib/http-send.js';
import { asCli, json, startTestApp, type TestApp } from '../helpers/app.js';
import { type ConsoleClient, ORIGIN, signIn, signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { startReceiver } from '../helpers/receiver.js';

// Backends: both — messages are written in their cause's transaction and sent by a job from the database
// Tier: quick
// Slack and Discord integrations (docs/integrations.md): messages written in the transaction of
// their cause, sent by the `integrations` job over real HTTP to a loopback receiver standing in for
// hooks.slack.com and discord.com, a 429's Retry-After and the back-off on the injected clock.
//
// The platform rule requires https://hooks.slack.com/… and https://discord.com/…, unreachable here:
// creation resolves those hosts through the injected resolver (public addresses, so the webhook-URL check passes), and
// the injected `integrationSend` is the delivery engine's real sender aimed at the receiver (the
// platform origin replaced by the receiver's http:// origin, path and body untouched).

// Console sign-ins and password changes hash with scrypt (at the suite's lower cost, vitest.config.ts; several per test here): on a loaded 2-core machine that outgrows the default 30 s.
vi.setConfig({ testTimeout: 120_000 });

let nowMs = Date.parse('2026-06-01T09:00:00.000Z');
const clock = { now: () => nowMs };
let t: TestApp;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let admin: ConsoleClient;
let ws: string;
let liveKey: string;
let testKey: string;
const dns: Record<string, string[]> = {
  'hooks.slack.com': ['3.120.10.10'],
  'discord.com': ['162.159.135.232'],
  'hooks.public.test': ['93.184.216.34'],
  'discordapp.com': ['10.0.0.7'], // a private address: refused at creation (docs/api.md#webhook-urls)
};
const SLACK = 'https://hooks.slack.com/services/T000/B000/slacksecret1234';
const DISCORD = 'https://discord.com/api/webhooks/123456/discordtoken9876';
const send = () => t.services.integrations.sendDue(t.services.uow.as(systemActor('scheduler:integrations')));

beforeAll(async () => {
  rx = await startReceiver();
  const real = createSender({ timeoutMs: 5000, allowInsecure: true });
  const integrationSend: Send = (url, headers, body) => {
    const u = new URL(url);
    return real(`${rx.url('')}${u.pathname}${u.search}`, headers, body);
  };
  t = await startTestApp({
    clock,
    // Sessions outlast the back-off schedule's clock jumps (2 h 8 min between two attempts, hours in all).
    config: { PUBLIC_URL: ORIGIN, CONSOLE_SESSION_IDLE_MIN: 24 * 60, CONSOLE_SESSION_MAX_H: 30 * 24 },
    resolveHost: async (host) => dns[host] ?? [],
    integrationSend,
  });
  const out = await t.services.workspaces.create(asCli(t.services), {
    name: 'Chat',
    adminEmail: 'chat.admin@example.test',
  });
  ws = out.workspace.id;
  liveKey = out.keys.live.key;
  testKey = out.keys.test.key;
  admin = await signInWithLink(t, out.set_password_url);
});
afterAll(async () => {
  await t.close();
  await rx.close();
});

const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
  admin.call({ method, url: `/console/api/integrations${url}`, ws, body });
async function connect(body: Record<string, unknown>) {
  const res = await api('POST', '', body);
  expect(res.statusCode, res.body).toBe(201);
  return json(res).data as { id: string; url_hint: string };
}
const log = async (id: string) => {
  const res = await api('GET', `/${id}/messages`);
  expect(res.statusCode, res.body).toBe(200);
  return json(res).data as {
    id: string;
    status: string;
    attempt_count: number;
    next_attempt_at: string | null;
    last_response_status: number | null;
    last_error: string | null;
    payload: Record<string, unknown>;
  }[];
};
const resource = (key: string, name: string) =>
  t.request({ method: 'POST', url: '/v1/resources', key, body: { name, type: 'standard' } });
const pathOf = (url: string) => new URL(url).pathname;

describe('connecting (docs/integrations.md#urls)', () => {
  it.each([
    ['slack', 'https://example.com/services/T/B/x', 'hooks.slack.com'],
    ['slack', 'http://hooks.slack.com/services/T/B/x', 'hooks.slack.com'],
    ['slack', 'https://hooks.slack.com/other/T/B/x', 'hooks.slack.com/services'],
    ['slack', 'https://hooks.slack.com:8443/services/T/B/x', 'hooks.slack.com'],
    ['slack', DISCORD, 'hooks.slack.com'],
    ['discord', SLACK, 'discord.com/api/webhooks'],
    ['discord', 'https://discord.com/channels/1/2', 'discord.com/api/webhooks'],
    ['discord', 'https://evil.discord.com.example/api/webhooks/1/x', 'discord.com/api/webhooks'],
  ])('a %s URL %s is refused with 400 naming the rule, and nothing is stored', async (kind, url, rule) => {
    const res = await api('POST', '', { kind, url, env: 'live', events: ['*'], categories: [] });
    expectError(res, 400, 'validation_error');
    const err = json(res).error;
    expect(err.details).toEqual([expect.objectContaining({ field: 'url', issue: 'not_platform_webhook' })]);
    expect(err.message).toContain(rule);
    expect(json(await api('GET', '')).data).toEqual([]);
  });

  it('a platform host resolving to a private address is refused (forbidden_address)', async () => {
    const res = await api('POST', '', {
      kind: 'discord',
      url: 'https://discordapp.com/api/webhooks/1/x',
      env: 'live',
      events: ['*'],
      categories: [],
    });
    expectError(res, 400, 'validation_error');
    expect(json(res).error.details[0]).toMatchObject({ field: 'url', issue: 'forbidden_address' });
  });

  it.each([
    [{ kind: 'teams', url: SLACK, env: 'live', events: ['*'], categories: [] }],
    [{ kind: 'slack', url: SLACK, env: 'prod', events: ['*'], categories: [] }],
    [{ kind: 'slack', url: SLACK, env: 'live', events: ['resource.exploded'], categories: [] }],
    [{ kind: 'slack', url: SLACK, env: 'live', events: [], categories: ['account'] }],
    [{ kind: 'slack', url: SLACK, env: 'live', events: [], categories: [] }],
    [{ kind: 'slack', url: SLACK, env: 'live', events: ['*'], categories: [], secret: 'x' }],
  ])('bad input %j is a 400 with the error body and stores nothing', async (body) => {
    expectError(await api('POST', '', body), 400, 'validation_error');
    expect(json(await api('GET', '')).data).toEqual([]);
  });

  it('a member who is not an admin gets 403 on every route and changes nothing', async () => {
    const made = await connect({ kind: 'slack', url: SLACK, env: 'live', events: ['*'], categories: [] });
    const inv = await t.services.members.invite(asCli(t.services), ws, {
      email: 'chat.member@example.test',
      role: 'member',
    });
    const member = await signInWithLink(t, inv.invite_url);
    const as = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
      member.call({ method, url: `/console/api/integrations${url}`, ws, body });
    expectError(await as('GET', ''), 403, 'insufficient_scope');
    expectError(
      await as('POST', '', { kind: 'slack', url: SLACK, env: 'live', events: ['*'], categories: [] }),
      403,
      'insufficient_scope',
    );
    expectError(await as('PATCH', `/${made.id}`, { status: 'disabled' }), 403, 'insufficient_scope');
    expectError(await as('POST', `/${made.id}/test`), 403, 'insufficient_scope');
    expectError(await as('GET', `/${made.id}/messages`), 403, 'insufficient_scope');
    expectError(await as('DELETE', `/${made.id}`), 403, 'insufficient_scope');
    expect(json(await api('GET', '')).data).toEqual([expect.objectContaining({ id: made.id, status: 'enabled' })]);
    expect(await log(made.id)).toEqual([]);
    expect((await api('DELETE', `/${made.id}`)).statusCode).toBe(204);
  });

  it('without a session it is 401; without the CSRF token 403; the URL is never shown in full', async () => {
    const anon = await t.request({ method: 'GET', url: '/console/api/integrations', headers: { origin: ORIGIN } });
    expect(anon.statusCode).toBe(401);
    const noCsrf = await t.request({
      method: 'POST',
      url: '/console/api/integrations',
      headers: { origin: ORIGIN, cookie: admin.cookie, 'x-workspace-id': ws },
      body: { kind: 'slack', url: SLACK, env: 'live', events: ['*'], categories: [] },
    });
    expect(noCsrf.statusCode).toBe(403);
    const made = await connect({ kind: 'slack', url: SLACK, env: 'live', events: ['*'], categories: [] });
    expect(made.url_hint).toBe('hooks.slack.com …1234');
    const listed = await api('GET', '');
    expect(listed.body).not.toContain('slacksecret');
    expect(json(listed).data).toEqual([expect.objectContaining({ id: made.id, status: 'enabled', kind: 'slack' })]);
    expect((await api('DELETE', `/${made.id}`)).statusCode).toBe(204);
    expectError(await api('DELETE', `/${made.id}`), 404, 'not_found');
  });
});

describe('sending (docs/integrations.md#sending)', () => {
  it('a resource event of the chosen environment reaches "Slack" as Block Kit JSON; the test env does not', async () => {
    const i = await connect({ kind: 'slack', url: SLACK, env: 'live', events: ['resource.created'], categories: [] });
    expect((await resource(liveKey, 'Blue widget')).statusCode).toBe(201);
    expect((await resource(testKey, 'Test widget')).statusCode).toBe(201);
    const before = rx.to(pathOf(SLACK)).length;
    expect(await send()).toBe(1);
    const got = rx.to(pathOf(SLACK)).slice(before);
    expect(got).toHaveLength(1);
    expect(got[0]?.headers['content-type']).toBe('application/json');
    const body = JSON.parse(got[0]?.body ?? '');
    // https://api.slack.com/reference/block-kit/blocks: a fallback `text` and the blocks.
    expect(body).toEqual({
      text: expect.stringContaining('resource.created'),
      blocks: [
        { type: 'header', text: { type: 'plain_text', text: 'Event resource.created', emoji: false } },
        { type: 'section', text: { type: 'mrkdwn', text: expect.stringContaining('Blue widget') } },
        { type: 'section', fields: expect.arrayContaining([{ type: 'mrkdwn', text: '*Name*\nBlue widget' }]) },
        { type: 'context', elements: [{ type: 'mrkdwn', text: expect.stringContaining('2026-06-01T09:00:00.000Z') }] },
      ],
    });
    const [m] = await log(i.id);
    expect(m).toMatchObject({ status: 'sent', attempt_count: 1, last_response_status: 200, next_attempt_at: null });
    expect(m?.payload).toEqual(body);
    expect(await send()).toBe(0); // sent once
    await api('DELETE', `/${i.id}`);
  });

  it('a 429 with Retry-After: 7 is retried no earlier than 7 s later', async () => {
    const url = 'https://hooks.slack.com/services/T000/B429/ratelimited0429';
    const i = await connect({ kind: 'slack', url, env: 'live', events: ['*'], categories: [] });
    rx.plan(pathOf(url), [{ status: 429, headers: { 'retry-after': '7' }, body: 'rate_limited' }, { status: 200 }]);
    await resource(liveKey, 'Rate limited');
    const start = nowMs;
    expect(await send()).toBe(0);
    let [m] = await log(i.id);
    expect(m).toMatchObject({ status: 'pending', attempt_count: 1, last_response_status: 429 });
    expect(m?.next_attempt_at).toBe(new Date(start + 7000).toISOString());
    nowMs = start + 6999;
    expect(await send()).toBe(0);
    expect(rx.to(pathOf(url))).toHaveLength(1);
    nowMs = start + 7000;
    expect(await send()).toBe(1);
    expect(rx.to(pathOf(url))).toHaveLength(2);
    [m] = await log(i.id);
    expect(m).toMatchObject({ status: 'sent', attempt_count: 2, last_response_status: 200 });
    await api('DELETE', `/${i.id}`);
  });

  it('a 500 is retried with back-off (30 s, 2 min, 8 min, 32 min, 2 h 8 min), then given up after 6 attempts', async () => {
    const url = 'https://hooks.slack.com/services/T000/B500/servererror0500';
    const i = await connect({ kind: 'slack', url, env: 'live', events: ['*'], categories: [] });
    rx.plan(pathOf(url), [{ status: 500, body: 'oops' }]);
    await resource(liveKey, 'Failing');
    let last = nowMs;
    expect(await send()).toBe(0);
    for (const delay of [30_000, 120_000, 480_000, 1_920_000, 7_680_000]) {
      const [m] = await log(i.id);
      expect(m).toMatchObject({ status: 'pending', last_response_status: 500, last_error: 'HTTP 500' });
      expect(m?.next_attempt_at).toBe(new Date(last + delay).toISOString());
      const seen = rx.to(pathOf(url)).length;
      nowMs = last + delay - 1;
      await send();
      expect(rx.to(pathOf(url))).toHaveLength(seen); // not 1 ms early
      nowMs = last + delay;
      await send();
      expect(rx.to(pathOf(url))).toHaveLength(seen + 1);
      last = nowMs;
    }
    const [m] = await log(i.id);
    expect(m).toMatchObject({ status: 'failed', attempt_count: 6, next_attempt_at: null });
    nowMs += 24 * 3_600_000;
    await send();
    expect(rx.to(pathOf(url))).toHaveLength(6);
    admin = await signIn(t, 'chat.admin@example.test'); // a day later: a new session
    await api('DELETE', `/${i.id}`);
  });

  it('a notification category is forwarded to "Discord" as an embed, once per workspace', async () => {
    const i = await connect({ kind: 'discord', url: DISCORD, env: 'live', events: [], categories: ['security'] });
    // A second admin: the notification has two recipients, the integration one message.
    const invited = await admin.call({
      method: 'POST',
      url: '/console/api/members',
      ws,
      body: { email: 'second.admin@example.test', role: 'admin' },
    });
    expect(invited.statusCode, invited.body).toBe(201);
    await send();
    const before = rx.to(pathOf(DISCORD)).length;
    const key = await t.request({
      method: 'POST',
      url: '/v1/keys',
      key: liveKey,
      body: { name: 'CI key', env: 'live' },
    });
    expect(key.statusCode, key.body).toBe(201);
    // An event of the live env is not forwarded: this integration chose no events.
    await resource(liveKey, 'Not forwarded');
    expect(await send()).toBe(1);
    const got = rx.to(pathOf(DISCORD)).slice(before);
    expect(got).toHaveLength(1);
    const body = JSON.parse(got[0]?.body ?? '');
    // https://discord.com/developers/docs/resources/message#embed-object
    expect(body).toEqual({
      embeds: [
        {
          title: expect.stringContaining('API key created: CI key'),
          description: expect.any(String),
          color: expect.any(Number),
          timestamp: new Date(nowMs).toISOString(),
          fields: expect.arrayContaining([
            { name: 'Category', value: 'security', inline: true },
            { name: 'Type', value: 'key.created', inline: true },
          ]),
          footer: { text: 'Workspace Service' },
        },
      ],
      allowed_mentions: { parse: [] },
    });
    const entries = await log(i.id);
    expect(entries.filter((e) => e.status === 'sent').length).toBe(entries.length);
    await api('DELETE', `/${i.id}`);
  });

  it('a webhooks notification (endpoint disabled) is forwarded without the endpoint URL in its fields', async () => {
    const url = 'https://discord.com/api/webhooks/777/endpointhealth01';
    const i = await connect({ kind: 'discord', url, env: 'live', events: [], categories: ['webhooks'] });
    const hook = await t.request({
      method: 'POST',
      url: '/v1/webhooks',
      key: liveKey,
      body: { url: 'https://hooks.public.test/in?token=hooksecret', events: ['*'], label: 'Orders' },
    });
    expect(hook.statusCode, hook.body).toBe(201);
    const row = (await t.storage.db
      .selectFrom('webhooks')
      .selectAll()
      .where('id', '=', json(hook).data.id)
      .executeTakeFirstOrThrow()) as WebhooksTable;
    const at = new Date(nowMs).toISOString();
    // What endpoint health does in the worker's cycle, in one transaction (test/webhooks/endpoint-health.test.ts drives the real thing).
    await t.services.uow
      .as(systemActor('worker'))
      .run((c) => c.emit({ type: 'endpoint.health', kind: 'disabled', webhook: row, at }));
    expect(await send()).toBe(1);
    const [got] = rx.to(pathOf(url));
    const embed = JSON.parse(got?.body ?? '').embeds[0];
    expect(embed.title).toBe('Webhook endpoint disabled: Orders');
    expect(embed.fields).toEqual(
      expect.arrayContaining([
        { name: 'Category', value: 'webhooks', inline: true },
        { name: 'Type', value: 'endpoint.disabled', inline: true },
        { name: 'webhook_id', value: row.id, inline: true },
      ]),
    );
    expect(got?.body).not.toContain('hooksecret');
    await api('DELETE', `/${i.id}`);
  });

  it('usage and billing notifications are forwarded to the integrations that chose their category', async () => {
    const url = 'https://discord.com/api/webhooks/778/usagebilling001';
    const i = await connect({ kind: 'discord', url, env: 'live', events: [], categories: ['usage'] });
    const at = new Date(nowMs).toISOString();
    const period = { period_start: '2026-04-01T00:00:00.000Z', period_end: '2026-05-01T00:00:00.000Z' };
    await t.services.uow.as(systemActor('scheduler:billing-usage-notices')).run(async (c) => {
      await c.emit({
        type: 'billing.notice',
        notice: {
          type: 'usage.threshold',
          workspaceId: ws,
          data: {
            threshold: 80,
            billable_requests: 8000,
            included_requests: 10000,
            plan: 'free',
            plan_name: 'Free',
            hard_cap: true,
            ...period,
            at,
          },
        },
      });
      // Not chosen by this integration: no message for it.
      await c.emit({
        type: 'billing.notice',
        notice: {
          type: 'invoice.issued',
          workspaceId: ws,
          data: { invoice_id: 'inv_x', number: 'INV-9', plan: 'free', total_cents: 0, currency: 'usd', ...period, at },
        },
      });
    });
    expect(await send()).toBe(1);
    const got = rx.to(pathOf(url));
    expect(got).toHaveLength(1);
    const embed = JSON.parse(got[0]?.body ?? '').embeds[0];
    expect(embed.title).toBe('Usage at 80 % of included requests: 8,000 of 10,000');
    expect(embed.fields).toEqual(
      expect.arrayContaining([
        { name: 'Category', value: 'usage', inline: true },
        { name: 'Type', value: 'usage.threshold', inline: true },
      ]),
    );
    await api('DELETE', `/${i.id}`);
  });

  it('"send a test message" queues one message, sent by the job; a disabled integration gets no events', async () => {
    const url = 'https://hooks.slack.com/services/T000/BTEST/testmessage0001';
    const i = await connect({ kind: 'slack', url, env: 'live', events: ['*'], categories: [] });
    const res = await api('POST', `/${i.id}/test`);
    expect(res.statusCode, res.body).toBe(202);
    expect(json(res).data).toMatchObject({ source: 'test', status: 'pending' });
    expect(await send()).toBe(1);
    expect(JSON.parse(rx.to(pathOf(url))[0]?.body ?? '').blocks[0].text.text).toBe('Test message');
    const off = await api('PATCH', `/${i.id}`, { status: 'disabled' });
    expect(json(off).data.status).toBe('disabled');
    await resource(liveKey, 'While disabled');
    expect(await send()).toBe(0);
    expect(await log(i.id)).toHaveLength(1);
    expectError(await api('PATCH', `/${i.id}`, { url: SLACK }), 400, 'validation_error');
    expectError(await api('PATCH', `/${i.id}`, {}), 400, 'validation_error');
    expectError(await api('PATCH', `/${i.id}`, { events: [], categories: [] }), 400, 'validation_error');
    expect(json(await api('GET', '')).data[0]).toMatchObject({ status: 'disabled', events: ['*'] });
    await api('DELETE', `/${i.id}`);
  });

  it('the purge job deletes finished messages created more than 30 days ago, never pending ones', async () => {
    const url = 'https://hooks.slack.com/services/T000/BPURGE/purgeme000001';
    const i = await connect({ kind: 'slack', url, env: 'live', events: ['*'], categories: [] });
    rx.plan(pathOf(url), [{ status: 200 }, { status: 503 }]);
    const created = nowMs;
    await api('POST', `/${i.id}/test`); // sent below
    nowMs += 1;
    await api('POST', `/${i.id}/test`); // fails, stays pending (retrying)
    nowMs += 1;
    await send();
    expect((await log(i.id)).map((m) => m.status).sort()).toEqual(['pending', 'sent']);
    const purge = t.services.jobs.find((j) => j.id === 'purge-integration-messages');
    nowMs = created + 30 * 24 * 3_600_000;
    expect(await purge?.run()).toBe(0); // exactly 30 days old: kept
    nowMs += 1;
    expect(await purge?.run()).toBe(1);
    admin = await signIn(t, 'chat.admin@example.test');
    expect((await log(i.id)).map((m) => m.status)).toEqual(['pending']);
    await api('DELETE', `/${i.id}`);
  });
});

describe('a workspace scheduled for deletion (docs/data-lifecycle.md#deleting-a-workspace)', () => {
  it('posts nothing to chat until the deletion is cancelled; then the held message goes out', async () => {
    const hook = await connect({
      kind: 'slack',
      url: SLACK,
      env: 'live',
      events: ['resource.created'],
      categories: [],
    });
    expect((await resource(liveKey, 'Before deletion')).statusCode).toBe(201);
    await t.services.workspaceDeletion.schedule(asCli(t.services), ws, { confirm: 'Chat' });
    await send();
    expect((await log(hook.id)).map((m) => m.status)).toEqual(['pending']);
    await t.services.workspaceDeletion.cancel(asCli(t.services), ws);
    await send();
    expect((await log(hook.id)).map((m) => m.status)).toEqual(['sent']);
    expect((await api('DELETE', `/${hook.id}`)).statusCode).toBe(204);
  });
});
