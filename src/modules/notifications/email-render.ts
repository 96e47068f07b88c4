import type { NotificationsTable } from '../../db/types.js';
import type {
  InvoiceNoticeData,
  LinkNoticeData,
  SecurityNoticeData,
  UsageNoticeData,
} from '../../platform/domain-events.js';

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

function emailOf(
  greetingName: string | null,
  lines: string[],
  link: { label: string; url: string },
  footer: string[] = [],
) {
  const greeting = `Hello${greetingName ? ` ${greetingName}` : ''},`;
  const text = [
    greeting,
    '',
    ...lines,
    '',
    `${link.label}: ${link.url}`,
    ...(footer.length ? ['', ...footer] : []),
    '',
  ].join('\n');
  const html = [
    '<!doctype html><html><body>',
    `<p>${escapeHtml(greeting)}</p>`,
    ...lines.map((l) => `<p>${escapeHtml(l)}</p>`),
    `<p><a href="${escapeHtml(link.url)}">${escapeHtml(link.label)}</a></p>`,
    ...footer.map((l) => `<p><small>${escapeHtml(l)}</small></p>`),
    '</body></html>',
  ].join('\n');
  return { text, html };
}

/** The email of an invite (`invite`) or a password reset (`password.reset`); `url` is the single-use link. */
export function renderLinkEmail(
  type: 'invite' | 'password.reset',
  d: LinkNoticeData,
  to: Recipient,
  url: string,
): RenderedEmail {
  const until = formatTime(d.expires_at, to.timezone);
  if (type === 'invite') {
    const subject = `You are invited to ${d.workspace_name} on Workspace Service`;
    const lines = [
      `You were added to the workspace ${d.workspace_name}${d.role ? ` as ${d.role}` : ''}.`,
      `Set your password with the link below. It works once and until ${until}.`,
    ];
    const footer = ['If you did not expect this invitation, you can ignore this email.'];
    return { subject, ...emailOf(to.name, lines, { label: 'Set your password', url }, footer) };
  }
  const subject = 'Reset your Workspace Service password';
  const lines = [
    `Someone asked to reset the password of ${to.email}.`,
    `Choose a new password with the link below. It works once and until ${until}.`,
  ];
  const footer = ['If you did not ask for this, ignore this email: your password stays as it is.'];
  return { subject, ...emailOf(to.name, lines, { label: 'Choose a new password', url }, footer) };
}

/** What each sign-in security notification says, after "at <time>" is known (docs/notifications.md). */
const SIGN_IN_LINES: Partial<Record<NotificationsTable['type'], (d: SecurityNoticeData, time: string) => string>> = {
  'mfa.enabled': (_d, t) => `Two-factor codes from an authenticator app were turned on for your account at ${t}.`,
  'mfa.disabled': (_d, t) => `Two-factor codes were turned off for your account at ${t}.`,
  'mfa.reset': (d, t) =>
    `${d.by ?? 'An admin'} reset your second factors at ${t}: your authenticator app, recovery codes and passkeys no longer sign you in. Set up a new one at your next sign-in.`,
  'mfa.code_reused': (_d, t) =>
    `A two-factor code of your account that was already used was entered again at ${t} and refused. If that was not you, someone may know your password: change it.`,
  'recovery_codes.regenerated': (_d, t) =>
    `New recovery codes were made for your account at ${t}; the old ones no longer work.`,
  'recovery_code.used': (d, t) =>
    `A recovery code was used to sign in to your account at ${t}; ${d.factor?.remaining ?? 0} remain.`,
  'passkey.added': (d, t) => `The passkey "${d.factor?.name}" was added to your account at ${t}.`,
  'passkey.removed': (d, t) => `The passkey "${d.factor?.name}" was removed from your account at ${t}.`,
  'sso.configured': (d, t) =>
    `${d.by ?? 'An admin'} changed the workspace's single sign-on at ${t}: ${settingsText(d)}.`,
  'workspace.settings_changed': (d, t) =>
    `${d.by ?? 'An admin'} changed the workspace's sign-in policy at ${t}: ${settingsText(d)}.`,
  'workspace.deletion_scheduled': (d, t) =>
    `${d.by ?? 'An admin'} scheduled the deletion of the workspace at ${t}: its API keys and webhook deliveries stopped at once, and all its data is deleted after ${String(d.settings?.delete_at ?? 'the grace period')}. An admin can cancel the deletion in the console's settings until then.`,
  'workspace.deletion_cancelled': (d, t) =>
    `${d.by ?? 'An admin'} cancelled the deletion of the workspace at ${t}: its API keys and webhook deliveries work again.`,
};

function settingsText(d: SecurityNoticeData): string {
  return Object.entries(d.settings ?? {})
    .map(([k, v]) => `${k.replace(/_/g, ' ')} ${Array.isArray(v) ? v.join(', ') || 'none' : String(v ?? 'none')}`)
    .join('; ');
}

/** A one-line summary of a security notification (the feed's title and the email's subject). */
export function securityTitle(type: NotificationsTable['type'], d: SecurityNoticeData): string {
  const key = d.key ? `${d.key.name} (${d.key.env}, ${d.key.prefix}…)` : '';
  switch (type) {
    case 'key.created':
      return `API key created: ${key}`;
    case 'key.revoked':
      return `API key revoked: ${key}`;
    case 'key.rolled':
      return `API key rolled: ${key}`;
    case 'key.expiring':
      return `API key expiring in 7 days or less: ${key}`;
    case 'password.changed':
      return 'Your password was changed';
    case 'member.added':
      return `Member added: ${d.member?.email} (${d.member?.role})`;
    case 'member.removed':
      return `Member removed: ${d.member?.email}`;
    case 'member.role_changed':
      return `Role changed: ${d.member?.email} is now ${d.member?.role}`;
    case 'mfa.enabled':
      return 'Two-factor codes turned on';
    case 'mfa.disabled':
      return 'Two-factor codes turned off';
    case 'mfa.reset':
      return 'Your second factors were reset by an admin';
    case 'mfa.code_reused':
      return 'A used two-factor code was entered again';
    case 'recovery_codes.regenerated':
      return 'New recovery codes made';
    case 'recovery_code.used':
      return `Recovery code used to sign in (${d.factor?.remaining ?? 0} left)`;
    case 'passkey.added':
      return `Passkey added: ${d.factor?.name}`;
    case 'passkey.removed':
      return `Passkey removed: ${d.factor?.name}`;
    case 'sso.configured':
      return 'Single sign-on settings changed';
    case 'workspace.settings_changed':
      return 'Sign-in policy changed';
    case 'workspace.deletion_scheduled':
      return `Workspace scheduled for deletion on ${String(d.settings?.delete_at ?? '')}`;
    case 'workspace.deletion_cancelled':
      return 'Workspace deletion cancelled';
    default:
      return type;
  }
}

/** The email of a security notification, for one recipient; `link` opens the page in the console. */
export function renderSecurityEmail(
  type: NotificationsTable['type'],
  d: SecurityNoticeData,
  to: Recipient,
  link: string,
): RenderedEmail {
  const time = formatTime(d.at, to.timezone);
  const lines: string[] = [];
  const signIn = SIGN_IN_LINES[type];
  if (signIn) {
    lines.push(signIn(d, time));
  } else if (d.key) {
    const owner = d.key.owner_email ? ` owned by ${d.key.owner_email}` : '';
    const what = `The ${d.key.env} API key "${d.key.name}" (${d.key.prefix}…, ${d.key.id})${owner}`;
    if (type === 'key.created') lines.push(`${what} was created at ${time}.`);
    else if (type === 'key.revoked') lines.push(`${what} was revoked at ${time}; it no longer works.`);
    else if (type === 'key.expiring') {
      const until = d.expires_at ? formatTime(d.expires_at, to.timezone) : 'its expiry';
      lines.push(`${what} stops working at ${until}.`);
      lines.push('Roll it or create a new key and move your clients to it before then.');
    } else {
      lines.push(`${what} was rolled at ${time}: its successor is ${d.successor_id}.`);
      if (d.old_expires_at) lines.push(`The old key stops working at ${formatTime(d.old_expires_at, to.timezone)}.`);
    }
  } else if (d.member) {
    const m = d.member;
    if (type === 'member.added') lines.push(`${m.email} joined the workspace as ${m.role} at ${time}.`);
    else if (type === 'member.removed')
      lines.push(`${m.email} was removed from the workspace at ${time}; their keys no longer work.`);
    else lines.push(`The role of ${m.email} changed from ${m.previous_role} to ${m.role} at ${time}.`);
  } else {
    lines.push(
      `The console password of ${to.email} was changed at ${time}. Your other console sessions were signed out.`,
    );
  }
  lines.push('If this was not you or someone you trust, review your keys and members now.');
  return {
    subject: securityTitle(type, d),
    ...emailOf(to.name, lines, { label: 'Open the console', url: link }, [
      'Security notifications are always sent; they cannot be turned off.',
    ]),
  };
}

/** `4900` → `$49.00`. */
export const formatCents = (cents: number) =>
  `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;

const usageTitle = (d: UsageNoticeData) =>
  `Usage at ${d.threshold} % of included requests: ${d.billable_requests.toLocaleString('en-US')} of ${d.included_requests.toLocaleString('en-US')}`;
const invoiceTitle = (d: InvoiceNoticeData) => `Invoice ${d.number} issued: ${formatCents(d.total_cents)}`;
const paymentFailedTitle = (d: InvoiceNoticeData) =>
  `Payment of invoice ${d.number} failed: ${formatCents(d.total_cents)}${d.decline_code ? ` (${d.decline_code})` : ''}`;

/** The email of a usage or billing notification, for one recipient; `link` opens the billing page. */
export function renderBillingEmail(
  type: NotificationsTable['type'],
  data: UsageNoticeData | InvoiceNoticeData,
  to: Recipient,
  link: string,
): RenderedEmail {
  const time = (iso: string) => formatTime(iso, to.timezone);
  const footer = ['You get this as an admin of the workspace; choose your channels in your profile.'];
  if (type === 'usage.threshold') {
    const d = data as UsageNoticeData;
    const lines = [
      `The workspace has used ${d.billable_requests.toLocaleString('en-US')} billable requests of the ${d.included_requests.toLocaleString('en-US')} included in the ${d.plan_name} plan this period (${d.threshold} % or more), as of ${time(d.at)}.`,
      `The period ends at ${time(d.period_end)}.`,
      d.hard_cap
        ? d.threshold >= 100
          ? 'Live requests are refused with 429 quota_exceeded until the period ends; move to a larger plan to continue now.'
          : 'At 100 % live requests are refused with 429 quota_exceeded until the period ends.'
        : "Requests over the included ones are billed as overage on the period's invoice.",
    ];
    return { subject: usageTitle(d), ...emailOf(to.name, lines, { label: 'Open billing', url: link }, footer) };
  }
  const d = data as InvoiceNoticeData;
  if (type === 'invoice.payment_failed') {
    const lines = [
      `The card charge of invoice ${d.number} (${formatCents(d.total_cents)}, ${d.plan} plan) failed at ${time(d.at)}${d.message ? `: ${d.message}` : '.'}`,
      d.next_attempt_at
        ? `The card is charged again at ${time(d.next_attempt_at)}. Add a new card on the billing page to retry at once.`
        : 'That was the last attempt: the invoice is uncollectible and live API requests are refused with 402 payment_required until an invoice is paid. Add a new card on the billing page to pay it.',
    ];
    return {
      subject: paymentFailedTitle(d),
      ...emailOf(to.name, lines, { label: 'Update the card', url: link }, footer),
    };
  }
  const lines = [
    `Invoice ${d.number} for the period ${time(d.period_start)} to ${time(d.period_end)} (${d.plan} plan) was issued at ${time(d.at)}.`,
    `Total: ${formatCents(d.total_cents)} (${d.currency.toUpperCase()}).`,
  ];
  return { subject: invoiceTitle(d), ...emailOf(to.name, lines, { label: 'View the invoice', url: link }, footer) };
}

/** The one-line title of a notification in the console's feed (the email's subject, without the recipient). */
export function notificationTitle(type: NotificationsTable['type'], data: unknown): string {
  if (type.startsWith('endpoint.')) {
    const d = data as EndpointNoticeData;
    const what = d.label ?? d.url;
    if (type === 'endpoint.failing') return `Webhook endpoint failing: ${what}`;
    if (type === 'endpoint.disabled') return `Webhook endpoint disabled: ${what}`;
    return `Webhook endpoint recovered: ${what}`;
  }
  if (type === 'usage.threshold') return usageTitle(data as UsageNoticeData);
  if (type === 'invoice.issued') return invoiceTitle(data as InvoiceNoticeData);
  if (type === 'invoice.payment_failed') return paymentFailedTitle(data as InvoiceNoticeData);
  return securityTitle(type, data as SecurityNoticeData);
}
