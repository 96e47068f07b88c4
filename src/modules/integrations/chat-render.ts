import type { Platform } from '../../kernel/platforms.js';
/**
 * What an integration message says, and its two renderings (docs/integrations.md#messages): a Slack
 * Block Kit message (https://api.slack.com/block-kit) and a Discord embed
 * (https://discord.com/developers/docs/resources/message#embed-object). Pure functions.
 */

/** A message before rendering. */
export interface IntegrationMessage {
  title: string;
  summary: string;
  /** Name and value pairs shown under the summary (at most 10 kept). */
  fields: [string, string][];
  /** When it happened (ISO 8601, UTC). */
  at: string;
  /** Where it comes from, e.g. "Workspace Service · live". */
  footer: string;
}

// Documented limits (docs/integrations.md#messages cites the pages). Slack: header text 150, section
// text 3000, section fields 10 of 2000 each, context elements 10, a text object 3000, 50 blocks.
// Discord: title 256, description 4096, 25 fields of name 256 and value 1024 (neither empty),
// footer 2048, and 6000 characters in all across title, description, fields and footer.
const MAX_FIELDS = 10;
const DISCORD_TOTAL = 6000;

/** `s` in at most `max` characters (code points, never half a surrogate pair), with "…" when cut. */
export function cut(s: string, max: number): string {
  const chars = [...s];
  return chars.length <= max ? s : `${chars.slice(0, max - 1).join('')}…`;
}

/** Slack mrkdwn: &, < and > are control characters and must be escaped. */
export function slackEscape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** `s` escaped for mrkdwn in at most `max` characters, cut before an escape rather than through it. */
function slackText(s: string, max: number): string {
  const escaped = slackEscape(s);
  if ([...escaped].length <= max) return escaped;
  let out = '';
  let n = 0;
  for (const c of s) {
    const e = slackEscape(c);
    if (n + e.length > max - 1) break;
    out += e;
    n += e.length;
  }
  return `${out}…`;
}

/** The Block Kit body of an incoming-webhook POST: `text` (the notification fallback, mrkdwn too) and `blocks`. */
export function renderSlack(m: IntegrationMessage): Record<string, unknown> {
  const fields = m.fields.slice(0, MAX_FIELDS).map(([name, value]) => ({
    type: 'mrkdwn',
    text: `*${slackText(name, 200)}*\n${slackText(value, 1700)}`,
  }));
  const blocks: Record<string, unknown>[] = [
    { type: 'header', text: { type: 'plain_text', text: cut(m.title, 150), emoji: false } },
    { type: 'section', text: { type: 'mrkdwn', text: slackText(m.summary, 3000) } },
  ];
  if (fields.length > 0) blocks.push({ type: 'section', fields });
  blocks.push({
    type: 'context',
    elements: [{ type: 'mrkdwn', text: slackText(`${m.footer} · ${m.at}`, 3000) }],
  });
  // The fallback is mrkdwn as well: unescaped, a name like <!channel> would notify the whole channel.
  return { text: slackText(`${m.title}: ${m.summary}`, 3000), blocks };
}

/** Discord's blurple. */
const DISCORD_COLOR = 0x5865f2;

/** The body of a Discord webhook POST: one embed within Discord's limits, and no mentions parsed (no @everyone from data). */
export function renderDiscord(m: IntegrationMessage): Record<string, unknown> {
  const title = cut(m.title, 256);
  const footer = cut(m.footer, 2048);
  const len = (s: string) => [...s].length;
  let left = DISCORD_TOTAL - len(title) - len(footer);
  const description = cut(m.summary, Math.min(4096, left - 200));
  left -= len(description);
  // Fields while the embed's 6000 characters last (a long description leaves fewer).
  const fields: { name: string; value: string; inline: boolean }[] = [];
  for (const [n, v] of m.fields.slice(0, MAX_FIELDS)) {
    const name = cut(n === '' ? '—' : n, 256);
    const room = Math.min(1024, left - len(name));
    if (room < 2) break;
    const value = cut(v === '' ? '—' : v, room);
    fields.push({ name, value, inline: true });
    left -= len(name) + len(value);
  }
  return {
    embeds: [{ title, description, color: DISCORD_COLOR, timestamp: m.at, fields, footer: { text: footer } }],
    allowed_mentions: { parse: [] },
  };
}

export function renderChatMessage(kind: Platform, m: IntegrationMessage): Record<string, unknown> {
  return kind === 'slack' ? renderSlack(m) : renderDiscord(m);
}

/** A resource event (its stored payload: `{id, event, created_at, data}`) as a message. */
export function eventMessage(payload: string, env: string): IntegrationMessage {
  const e = JSON.parse(payload) as { id: string; event: string; created_at: string; data: Record<string, unknown> };
  const d = e.data ?? {};
  const resource = (d.resource ?? {}) as Record<string, unknown>;
  const fields: [string, string][] = [['Event', e.event]];
  if (typeof d.resource_id === 'string') fields.push(['Resource', d.resource_id]);
  for (const k of ['name', 'type', 'status'] as const) {
    const v = resource[k];
    if (typeof v === 'string') fields.push([cap(k), v]);
  }
  if (typeof d.previous_status === 'string' && typeof d.current_status === 'string') {
    fields.push(['Status', `${d.previous_status} → ${d.current_status}`]);
  }
  fields.push(['Event id', e.id]);
  const name = typeof resource.name === 'string' ? ` “${resource.name}”` : '';
  return {
    title: `Event ${e.event}`,
    summary: `${e.event}${name} in the ${env} environment.`,
    fields,
    at: e.created_at,
    footer: `Workspace Service · ${env}`,
  };
}

/**
 * A notification as a message: its title as the feed shows it, its category and type, and the
 * workspace-level facts of its data (one level of nesting flattened as `key.field`); never a field
 * named like a URL, secret or token (an endpoint's URL may carry credentials of its own).
 */
export function notificationMessage(n: {
  category: string;
  type: string;
  title: string;
  data: Record<string, unknown>;
  at: string;
}): IntegrationMessage {
  const fields: [string, string][] = [
    ['Category', n.category],
    ['Type', n.type],
  ];
  const add = (name: string, v: unknown) => {
    if (/url|secret|token/i.test(name)) return;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') fields.push([name, String(v)]);
  };
  for (const [k, v] of Object.entries(n.data)) {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      for (const [k2, v2] of Object.entries(v as Record<string, unknown>)) add(`${k}.${k2}`, v2);
    } else add(k, v);
  }
  return {
    title: n.title,
    summary: `${n.title} (${n.category} notification).`,
    fields,
    at: n.at,
    footer: 'Workspace Service',
  };
}

/** "Send a test message" from the console. */
export function testMessage(at: string): IntegrationMessage {
  return {
    title: 'Test message',
    summary: 'This integration is connected: Workspace Service can post here.',
    fields: [],
    at,
    footer: 'Workspace Service',
  };
}

function cap(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
