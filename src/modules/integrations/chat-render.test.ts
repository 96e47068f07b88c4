import { describe, expect, it } from 'vitest';
import { cut, eventMessage, notificationMessage, renderDiscord, renderSlack, slackEscape } from './chat-render.js';
import { nextAttemptDelay, platformRule, urlHint } from './integrations.service.js';

// Backends: sqlite — rendering of Slack and Discord messages, pure
// Tier: quick

const payload = JSON.stringify({
  id: 'evt_1',
  event: 'resource.created',
  created_at: '2026-06-01T09:00:00.000Z',
  data: { resource_id: 'res_1', resource: { name: '<b>&co', type: 'standard', status: 'active' } },
});

describe('rendering (docs/integrations.md#messages)', () => {
  it('Slack: header, escaped mrkdwn section, fields and context; fallback text', () => {
    const body = renderSlack(eventMessage(payload, 'live')) as { text: string; blocks: Record<string, unknown>[] };
    expect(body.text).toBe('Event resource.created: resource.created “&lt;b&gt;&amp;co” in the live environment.');
    expect(body.blocks[0]).toEqual({
      type: 'header',
      text: { type: 'plain_text', text: 'Event resource.created', emoji: false },
    });
    expect(body.blocks[1]).toEqual({
      type: 'section',
      text: { type: 'mrkdwn', text: 'resource.created “&lt;b&gt;&amp;co” in the live environment.' },
    });
    expect(body.blocks[2]).toEqual({
      type: 'section',
      fields: [
        { type: 'mrkdwn', text: '*Event*\nresource.created' },
        { type: 'mrkdwn', text: '*Resource*\nres_1' },
        { type: 'mrkdwn', text: '*Name*\n&lt;b&gt;&amp;co' },
        { type: 'mrkdwn', text: '*Type*\nstandard' },
        { type: 'mrkdwn', text: '*Status*\nactive' },
        { type: 'mrkdwn', text: '*Event id*\nevt_1' },
      ],
    });
    expect(body.blocks[3]).toEqual({
      type: 'context',
      elements: [{ type: 'mrkdwn', text: 'Workspace Service · live · 2026-06-01T09:00:00.000Z' }],
    });
    expect(slackEscape('a<b>&')).toBe('a&lt;b&gt;&amp;');
    // The fallback is mrkdwn too: a name cannot mention the channel.
    const ping = renderSlack({ title: 'T', summary: '<!channel> hi', fields: [], at: 'now', footer: 'f' });
    expect(ping.text).toBe('T: &lt;!channel&gt; hi');
  });

  it('Slack: the documented length limits hold (header 150)', () => {
    const long = renderSlack({ title: 'x'.repeat(500), summary: 's', fields: [], at: 'now', footer: 'f' }) as {
      blocks: { text: { text: string } }[];
    };
    expect(long.blocks[0]?.text.text).toHaveLength(150);
    // Cut by characters, never through a surrogate pair or an escape.
    expect(cut('😀'.repeat(200), 150)).toBe(`${'😀'.repeat(149)}…`);
    const amp = renderSlack({ title: 't', summary: '&'.repeat(1000), fields: [], at: 'now', footer: 'f' }) as {
      blocks: { text?: { text: string } }[];
    };
    expect(amp.blocks[1]?.text?.text).toBe(`${'&amp;'.repeat(599)}…`);
  });

  it('Discord: one embed with title, description, color, timestamp, inline fields, footer; no mentions parsed', () => {
    const body = renderDiscord(eventMessage(payload, 'test'));
    expect(body).toEqual({
      embeds: [
        {
          title: 'Event resource.created',
          description: 'resource.created “<b>&co” in the test environment.',
          color: 0x5865f2,
          timestamp: '2026-06-01T09:00:00.000Z',
          fields: [
            { name: 'Event', value: 'resource.created', inline: true },
            { name: 'Resource', value: 'res_1', inline: true },
            { name: 'Name', value: '<b>&co', inline: true },
            { name: 'Type', value: 'standard', inline: true },
            { name: 'Status', value: 'active', inline: true },
            { name: 'Event id', value: 'evt_1', inline: true },
          ],
          footer: { text: 'Workspace Service · test' },
        },
      ],
      allowed_mentions: { parse: [] },
    });
  });

  it('a notification: title, category and type, nested data flattened, never URLs, secrets or tokens', () => {
    const m = notificationMessage({
      category: 'webhooks',
      type: 'endpoint.failing',
      title: 'Webhook endpoint failing: Orders',
      data: { webhook_id: 'wh_1', url: 'https://x.test/?token=s3cret', key: { name: 'k', secret: 'z' } },
      at: '2026-06-01T09:00:00.000Z',
    });
    expect(m.fields).toEqual([
      ['Category', 'webhooks'],
      ['Type', 'endpoint.failing'],
      ['webhook_id', 'wh_1'],
      ['key.name', 'k'],
    ]);
    expect(JSON.stringify(renderDiscord(m))).not.toContain('s3cret');
  });
});

describe('URL rule, hint and retry delay', () => {
  it('accepts only the platform webhook hosts and paths over https', () => {
    expect(platformRule('slack', 'https://hooks.slack.com/services/T/B/x')).toBeNull();
    expect(platformRule('discord', 'https://discord.com/api/webhooks/1/x')).toBeNull();
    expect(platformRule('discord', 'https://discordapp.com/api/webhooks/1/x')).toBeNull();
    expect(platformRule('slack', 'https://user:pw@hooks.slack.com/services/T/B/x')).toMatch(/hooks\.slack\.com/);
    expect(platformRule('discord', 'not a url')).toMatch(/discord\.com/);
    expect(urlHint('https://hooks.slack.com/services/T/B/abcd1234')).toBe('hooks.slack.com …1234');
  });

  it('429: Retry-After seconds or date as given; other failures back off; 404 and the 6th attempt give up', () => {
    const now = Date.parse('2026-06-01T09:00:00.000Z');
    expect(nextAttemptDelay(1, 429, '7', now)).toBe(7000);
    expect(nextAttemptDelay(1, 429, '1.5', now)).toBe(1500);
    expect(nextAttemptDelay(1, 429, 'Mon, 01 Jun 2026 09:01:00 GMT', now)).toBe(60_000);
    expect(nextAttemptDelay(1, 429, null, now)).toBe(30_000);
    // Discord: no header, the body's retry_after in seconds (a float); the header wins when both are there.
    const discord = JSON.stringify({ message: 'You are being rate limited.', retry_after: 2.345, global: false });
    expect(nextAttemptDelay(1, 429, null, now, discord)).toBe(2345);
    expect(nextAttemptDelay(1, 429, '3', now, discord)).toBe(3000);
    expect(nextAttemptDelay(1, 429, null, now, 'rate limited')).toBe(30_000);
    expect(nextAttemptDelay(1, 429, null, now, '{"retry_after": -1}')).toBe(30_000);
    expect(nextAttemptDelay(1, 503, null, now, discord)).toBe(30_000);
    expect(nextAttemptDelay(2, 500, null, now)).toBe(120_000);
    expect(nextAttemptDelay(1, null, null, now)).toBe(30_000);
    expect(nextAttemptDelay(1, 404, null, now)).toBeNull();
    expect(nextAttemptDelay(6, 500, null, now)).toBeNull();
  });
});
