import type { NotificationsTable } from '../../db/types.js';

/** What an endpoint notification says (`notifications.data`, written with it). */
export interface EndpointNoticeData {
  webhook_id: string;
  url: string;
  label: string | null;
  env: string;
  /** When it happened (the attempt's time). */
  at: string;
  failing_since: string | null;
  /** Hours of failure after which the endpoint is disabled (WEBHOOK_DISABLE_AFTER_H when written). */
  disable_after_h: number;
}

export interface Recipient {
  email: string;
  name: string | null;
  /** IANA zone of the profile; null: UTC. */
  timezone: string | null;
}

export interface RenderedEmail {
  subject: string;
  text: string;
  html: string;
}

/**
 * A time as the recipient reads it: in their profile's zone with the zone named, and UTC beside it
 * (`1 Mar 2026, 10:00 CET (Europe/Paris) · 2026-03-01 09:00 UTC`); UTC alone without a zone.
 */
export function formatTime(iso: string, timezone: string | null): string {
  const utc = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  if (!timezone || timezone === 'UTC') return utc;
  const local = new Intl.DateTimeFormat('en-GB', {
    timeZone: timezone,
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  }).format(new Date(iso));
  return `${local} (${timezone}) · ${utc}`;
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** The email of an endpoint notification, for one recipient; `link` opens the endpoint in the console. */
export function renderEndpointEmail(
  type: NotificationsTable['type'],
  d: EndpointNoticeData,
  to: Recipient,
  link: string,
): RenderedEmail {
  const name = d.label ? `${d.label} (${d.url})` : d.url;
  const time = (iso: string) => formatTime(iso, to.timezone);
  const since = d.failing_since ?? d.at;
  let subject: string;
  let lines: string[];
  if (type === 'endpoint.failing') {
    const disableAt = new Date(Date.parse(since) + d.disable_after_h * 3_600_000).toISOString();
    subject = `Webhook endpoint failing: ${d.label ?? d.url}`;
    lines = [
      `Deliveries to the ${d.env} webhook endpoint ${name} have been failing since ${time(since)}.`,
      `The last failed attempt was at ${time(d.at)}.`,
      `If every attempt keeps failing, the endpoint will be disabled at ${time(disableAt)} or at the first failed attempt after that.`,
    ];
  } else if (type === 'endpoint.disabled') {
    subject = `Webhook endpoint disabled: ${d.label ?? d.url}`;
    lines = [
      `Every attempt to deliver to the ${d.env} webhook endpoint ${name} failed from ${time(since)} to ${time(d.at)}, so it was disabled at ${time(d.at)}.`,
      'Its pending deliveries were cancelled and new events are not queued for it. Fix the receiver, then enable the endpoint again (and retry the cancelled deliveries if you need them).',
    ];
  } else {
    subject = `Webhook endpoint recovered: ${d.label ?? d.url}`;
    lines = [`A delivery to the ${d.env} webhook endpoint ${name} succeeded at ${time(d.at)}.`];
  }
  const greeting = `Hello${to.name ? ` ${to.name}` : ''},`;
  const text = [greeting, '', ...lines, '', `Open the endpoint: ${link}`, ''].join('\n');
  const html = [
    '<!doctype html><html><body>',
    `<p>${escapeHtml(greeting)}</p>`,
    ...lines.map((l) => `<p>${escapeHtml(l)}</p>`),
    `<p><a href="${escapeHtml(link)}">Open the endpoint</a></p>`,
    '</body></html>',
  ].join('\n');
  return { subject, text, html };
}
