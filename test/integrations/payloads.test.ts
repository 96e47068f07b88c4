import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NotificationType } from '../../src/db/types.js';
import { EVENT_TYPES } from '../../src/kernel/event-types.js';
import { systemActor } from '../../src/kernel/principal.js';
import { createSender, type Send } from '../../src/lib/http-send.js';
import {
  eventMessage,
  notificationMessage,
  renderDiscord,
  renderSlack,
} from '../../src/modules/integrations/chat-render.js';
import { notificationTitle } from '../../src/modules/notifications/email-render.js';
import { asCli, json, startTestApp, type TestApp } from '../helpers/app.js';
import { discordProblems, slackProblems } from '../helpers/chat-payloads.js';
import { type ConsoleClient, ORIGIN, signInWithLink } from '../helpers/console.js';
import { startReceiver } from '../helpers/receiver.js';

// Backends: sqlite — the shapes of the rendered Slack and Discord payloads; the queue and its retries run on both backends in test/integrations/integrations.test.ts
// Tier: quick
// Slack and Discord payloads checked against the platforms' documented shapes (test/helpers/chat-payloads.ts,
// written from their documentation, cited in docs/integrations.md#messages): every notification type
// and event type the integrations forward, with ordinary and over-long text (cut within the limits);
// then what really reaches a loopback receiver standing in for the platforms; then Discord's 429,
// whose wait is in the JSON body (`retry_after`, seconds, a float) and in no Retry-After header.

const AT = '2026-06-01T09:00:00.000Z';
/** Long, with characters that need escaping or are two UTF-16 units: what truncation must survive. */
const LONG = `<!channel> & <b>${'😀x&<'.repeat(2500)}`;

function dataOf(type: NotificationType, name: string): Record<string, unknown> {
  const key = { id: 'key_1', name, env: 'live', prefix: 'ab12', owner_email: `${name}@example.test` };
  const member = { id: 'usr_1', email: `${name}@example.test`, role: 'member', previous_role: 'viewer' };
  if (type.startsWith('endpoint.')) {
    const url = `https://hooks.example.test/${name}`;
    return { webhook_id: 'wh_1', url, label: name, env: 'live', at: AT, failing_since: AT, disable_after_h: 120 };
  }
  if (type.startsWith('key.')) return { at: AT, key, successor_id: 'key_2', old_expires_at: AT, expires_at: AT };
  if (type.startsWith('member.')) return { at: AT, member };
  if (type === 'usage.threshold') {
    const plan = { plan: 'pro', plan_name: name, hard_cap: false };
    return {
      threshold: 80,
      billable_requests: 8000,
      included_requests: 10000,
      ...plan,
      period_start: AT,
      period_end: AT,
      at: AT,
    };
  }
  if (type === 'invoice.issued') {
    return {
      invoice_id: 'inv_1',
      number: `INV-${name}`,
      plan: 'pro',
      total_cents: 6150,
      currency: 'usd',
      period_start: AT,
      period_end: AT,
      at: AT,
    };
  }
  return { at: AT };
}

/** Every notification type integrations forward (`account`: invites and resets are never forwarded). */
const FORWARDED: [string, NotificationType][] = [
  ['webhooks', 'endpoint.failing'],
  ['webhooks', 'endpoint.disabled'],
  ['webhooks', 'endpoint.recovered'],
  ['security', 'key.created'],
  ['security', 'key.revoked'],
  ['security', 'key.rolled'],
  ['security', 'key.expiring'],
  ['security', 'password.changed'],
  ['security', 'member.added'],
  ['security', 'member.removed'],
  ['security', 'member.role_changed'],
  ['usage', 'usage.threshold'],
  ['billing', 'invoice.issued'],
];

describe('the validator itself', () => {
  it('finds what breaks the documented limits', () => {
    const header = { type: 'header', text: { type: 'plain_text', text: 'x'.repeat(151) } };
    expect(slackProblems({ text: 'ok', blocks: [header] })).toEqual(['blocks[0].text.text: 151 characters, 1..150']);
    expect(slackProblems({ text: 'a <!channel>', blocks: [{ type: 'divider' }] })).toHaveLength(2);
    expect(
      slackProblems({ text: 'ok', blocks: Array(51).fill({ type: 'section', text: { type: 'mrkdwn', text: 'x' } }) }),
    ).toEqual(['blocks: 1..50']);
    const field = { name: 'n', value: 'v'.repeat(1024) };
    const big = { embeds: [{ title: 't', description: 'd'.repeat(4096), fields: [field, field], color: 1.5 }] };
    expect(discordProblems(big)).toEqual([
      'embeds[0].color: an integer 0..0xFFFFFF',
      'embeds: 6147 characters in all, at most 6000',
    ]);
    expect(discordProblems({ embeds: [{ fields: [{ name: '', value: 'v' }] }] })).toEqual([
      'embeds[0].fields[0].name: 1..256 characters',
    ]);
  });
});

describe('every forwarded notification and event fits the documented shapes', () => {
  it.each(FORWARDED)('%s %s, ordinary and over-long', (category, type) => {
    for (const name of ['Nightly export', LONG]) {
      const data = dataOf(type, name);
      const m = notificationMessage({ category, type, title: notificationTitle(type, data), data, at: AT });
      expect(slackProblems(renderSlack(m))).toEqual([]);
      expect(discordProblems(renderDiscord(m))).toEqual([]);
    }
  });

  it.each(EVENT_TYPES.map((e) => [e]))('%s, ordinary and over-long', (event) => {
    for (const name of ['Invoice 42', LONG]) {
      const resource = { id: 'res_1', name, type: 'standard', status: 'archived', metadata: { note: LONG } };
      const data = { resource_id: 'res_1', resource, previous_status: 'active', current_status: 'archived' };
      const payload = JSON.stringify({ id: 'evt_1', event, created_at: AT, data });
      const m = eventMessage(payload, 'live');
      expect(slackProblems(renderSlack(m))).toEqual([]);
      expect(discordProblems(renderDiscord(m))).toEqual([]);
    }
  });

  it('an over-long message keeps as much as the limits allow, cut with "…"', () => {
    const m = notificationMessage({
      category: 'webhooks',
      type: 'endpoint.failing',
      title: `Webhook endpoint failing: ${LONG}`,
      data: dataOf('endpoint.failing', LONG),
      at: AT,
    });
    const slack = renderSlack(m) as { blocks: { text?: { text: string } }[] };
    expect([...(slack.blocks[0]?.text?.text ?? '')]).toHaveLength(150);
    expect(slack.blocks[0]?.text?.text.endsWith('…')).toBe(true);
    const discord = renderDiscord(m) as { embeds: { title: string; description: string }[] };
    expect([...(discord.embeds[0]?.title ?? '')]).toHaveLength(256);
    expect(discord.embeds[0]?.description.endsWith('…')).toBe(true);
  });
});

// Over real HTTP through the integrations job, on SQLite and PostgreSQL (setup as in test/integrations/integrations.test.ts).
let nowMs = Date.parse(AT);
const clock = { now: () => nowMs };
let t: TestApp;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let admin: ConsoleClient;
let ws: string;
let liveKey: string;
let adminId: string;
const dns: Record<string, string[]> = { 'hooks.slack.com': ['3.120.10.10'], 'discord.com': ['162.159.135.232'] };
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
    config: { PUBLIC_URL: ORIGIN, CONSOLE_SESSION_IDLE_MIN: 24 * 60 },
    resolveHost: async (host) => dns[host] ?? [],
    integrationSend,
  });
  const out = await t.services.workspaces.create(asCli(t.services), {
    name: 'Shapes',
    adminEmail: 'shapes.admin@example.test',
  });
  ws = out.workspace.id;
  liveKey = out.keys.live.key;
  adminId = out.user.id;
  admin = await signInWithLink(t, out.set_password_url);
});
afterAll(async () => {
  await t.close();
  await rx.close();
});

async function connect(kind: 'slack' | 'discord', url: string, categories: string[], events: string[]) {
  const res = await admin.call({
    method: 'POST',
    url: '/console/api/integrations',
    ws,
    body: { kind, url, env: 'live', events, categories },
  });
  expect(res.statusCode, res.body).toBe(201);
  return json(res).data as { id: string };
}

describe('what reaches the platforms', () => {
  it('events and notifications with over-long names, as posted to Slack and Discord, fit the shapes', async () => {
    const slack = 'https://hooks.slack.com/services/T000/B000/shapes00slack';
    const discord = 'https://discord.com/api/webhooks/42/shapes00discord';
    const all = ['security', 'webhooks', 'usage', 'billing'];
    await connect('slack', slack, all, ['*']);
    await connect('discord', discord, all, ['*']);
    // 253 UTF-16 units (resource names allow 255), characters that need escaping and two-unit ones.
    const name = `<!channel> & ${'😀<&>'.repeat(48)}`;
    const call = (method: 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) =>
      t.request({ method, url, key: liveKey, body });
    const created = await call('POST', '/v1/resources', { name, type: 'standard' });
    expect(created.statusCode, created.body).toBe(201);
    const id = json(created).data.id as string;
    expect((await call('PUT', `/v1/resources/${id}`, { name: `${name.slice(0, 13)}renamed` })).statusCode).toBe(200);
    expect((await call('POST', `/v1/resources/${id}/archive`)).statusCode).toBe(200);
    await send();
    expect((await call('DELETE', `/v1/resources/${id}`)).statusCode).toBe(204);
    const key = await t.services.keyRegistry.create(asCli(t.services), {
      userId: adminId,
      env: 'live',
      name: `<!here> ${'😀<&>'.repeat(23)}`,
    });
    await t.services.keyRegistry.revoke(asCli(t.services), key.id);
    await send();
    const bodies = (path: string) => rx.to(path).map((r) => JSON.parse(r.body) as unknown);
    const toSlack = bodies(new URL(slack).pathname);
    const toDiscord = bodies(new URL(discord).pathname);
    // Four events and two security notifications each.
    expect(toSlack).toHaveLength(6);
    expect(toDiscord).toHaveLength(6);
    for (const b of toSlack) expect(slackProblems(b)).toEqual([]);
    for (const b of toDiscord) expect(discordProblems(b)).toEqual([]);
    // The mentions stay text: escaped in the fallback and every mrkdwn (plain_text headers are never parsed).
    for (const b of toSlack) expect((b as { text: string }).text).not.toMatch(/<!channel>|<!here>/);
  });

  it('Discord 429 with retry_after in the JSON body and no Retry-After header: retried exactly then', async () => {
    const url = 'https://discord.com/api/webhooks/429/ratelimited00body';
    const i = await connect('discord', url, [], ['*']);
    const path = new URL(url).pathname;
    const limited = { message: 'You are being rate limited.', retry_after: 2.5, global: false };
    rx.plan(path, [
      {
        status: 429,
        headers: { 'content-type': 'application/json', 'x-ratelimit-scope': 'shared' },
        body: JSON.stringify(limited),
      },
      { status: 204 },
    ]);
    const start = nowMs;
    const created = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: liveKey,
      body: { name: 'R', type: 'standard' },
    });
    expect(created.statusCode).toBe(201);
    await send();
    expect(rx.to(path)).toHaveLength(1);
    const log = async () =>
      json(await admin.call({ method: 'GET', url: `/console/api/integrations/${i.id}/messages`, ws })).data[0] as {
        status: string;
        attempt_count: number;
        next_attempt_at: string | null;
        last_response_status: number | null;
      };
    expect(await log()).toMatchObject({
      status: 'pending',
      attempt_count: 1,
      last_response_status: 429,
      next_attempt_at: new Date(start + 2500).toISOString(),
    });
    nowMs = start + 2499;
    await send();
    expect(rx.to(path)).toHaveLength(1);
    nowMs = start + 2500;
    expect(await send()).toBe(1);
    expect(rx.to(path)).toHaveLength(2);
    expect(await log()).toMatchObject({ status: 'sent', attempt_count: 2, last_response_status: 204 });
  });
});
