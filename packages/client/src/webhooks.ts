/**
 * `verifyWebhook`: checks that a delivery came from the service and is recent, then returns the
 * event, typed by its `event`. Web Crypto only, so it runs in Node 20+, browsers, Deno, Bun and
 * edge runtimes. Rules (docs/api.md, "Webhook deliveries"):
 * - Standard Webhooks: `webhook-signature` is one or more space-separated `v1,<base64>`, each an
 *   HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` keyed with the base64 part of a
 *   `whsec_` secret; `webhook-timestamp` (Unix seconds) must be within `toleranceS` of now.
 * - `X-Service-Signature`: hex HMAC-SHA256 of the body keyed with the secret's UTF-8 bytes.
 * Every signature header present must match one of the secrets; the Standard Webhooks headers
 * are required (they carry the timestamp that stops replays) unless `requireTimestamp` is false.
 * Several secrets are accepted at once, for the overlap after `rotate-secret`.
 */
import type { components } from './schema.js';

type Event = components['schemas']['Event'];
/** Every event type a delivery can carry. */
export type EventType = Event['event'];
/** A delivered event: the document's union discriminated by `event`, so `switch (event.event)` narrows `data`. */
export type WebhookEvent = Event;
/** The `data` of each event type. */
export type EventPayloads = { [T in EventType]: Extract<Event, { event: T }>['data'] };

export interface VerifyOptions {
  /** The endpoint's secret (`whsec_…`), or several during a rotation: any one may match. */
  secret: string | readonly string[];
  /** How far `webhook-timestamp` may be from now, in seconds (default 300). */
  toleranceS?: number;
  /** Milliseconds since the epoch (default `Date.now()`). */
  now?: () => number;
  /** Accept a delivery with `X-Service-Signature` only, which has no timestamp (default false). */
  requireTimestamp?: boolean;
}

/** Why a delivery was refused: `code` is one of the reasons below. */
export class WebhookVerificationError extends Error {
  override readonly name = 'WebhookVerificationError';
  constructor(
    readonly code:
      | 'missing_headers'
      | 'invalid_timestamp'
      | 'timestamp_out_of_range'
      | 'bad_signature'
      | 'invalid_body',
    message: string,
  ) {
    super(message);
  }
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value.join(', ') : value;
}

const encoder = new TextEncoder();

function fromBase64(text: string): Uint8Array | undefined {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

async function hmac(key: Uint8Array, message: Uint8Array): Promise<Uint8Array> {
  // Copies: Web Crypto takes views of a plain ArrayBuffer only.
  const k = await globalThis.crypto.subtle.importKey(
    'raw',
    new Uint8Array(key),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  return new Uint8Array(await globalThis.crypto.subtle.sign('HMAC', k, new Uint8Array(message)));
}

/** Compares in time that depends only on the lengths, never on where the bytes differ. */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i % b.length] ?? 0);
  return diff === 0;
}

function fromHex(text: string): Uint8Array | undefined {
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(text)) return undefined;
  return Uint8Array.from(text.match(/../g) as string[], (h) => Number.parseInt(h, 16));
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Verifies one delivery and returns its event. `body` must be the exact bytes received (read the
 * raw body, never a re-serialized object). Throws `WebhookVerificationError` when it is not
 * authentic or not recent.
 */
export async function verifyWebhook(
  body: string | Uint8Array,
  headers: HeaderSource,
  options: VerifyOptions,
): Promise<WebhookEvent> {
  const secrets = typeof options.secret === 'string' ? [options.secret] : [...options.secret];
  if (secrets.length === 0) throw new TypeError('verifyWebhook needs at least one secret.');
  const bytes = typeof body === 'string' ? encoder.encode(body) : body;
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  const service = header(headers, 'x-service-signature');
  const standard = id !== undefined && timestamp !== undefined && signatures !== undefined;
  if (!standard && (options.requireTimestamp ?? true)) {
    throw new WebhookVerificationError(
      'missing_headers',
      'webhook-id, webhook-timestamp and webhook-signature are required.',
    );
  }
  if (!standard && service === undefined) {
    throw new WebhookVerificationError('missing_headers', 'The delivery carries no signature header.');
  }
  if (standard) {
    if (!/^\d{1,12}$/.test(timestamp))
      throw new WebhookVerificationError('invalid_timestamp', 'webhook-timestamp is not Unix seconds.');
    const nowS = Math.floor((options.now?.() ?? Date.now()) / 1000);
    if (Math.abs(nowS - Number(timestamp)) > (options.toleranceS ?? 300)) {
      throw new WebhookVerificationError('timestamp_out_of_range', 'webhook-timestamp is outside the tolerance.');
    }
    const signed = concat(encoder.encode(`${id}.${timestamp}.`), bytes);
    const given = signatures
      .split(' ')
      .filter((s) => s.startsWith('v1,'))
      .map((s) => fromBase64(s.slice(3)))
      .filter((s): s is Uint8Array => s !== undefined);
    let ok = false;
    for (const secret of secrets) {
      const key = fromBase64(secret.startsWith('whsec_') ? secret.slice(6) : secret);
      if (!key) continue;
      const expected = await hmac(key, signed);
      for (const g of given) ok = timingSafeEqual(expected, g) || ok;
    }
    if (!ok) throw new WebhookVerificationError('bad_signature', 'No webhook-signature matches a secret.');
  }
  if (service !== undefined) {
    const given = fromHex(service.trim());
    let ok = false;
    for (const secret of secrets) {
      const expected = await hmac(encoder.encode(secret), bytes);
      if (given) ok = timingSafeEqual(expected, given) || ok;
    }
    if (!ok) throw new WebhookVerificationError('bad_signature', 'X-Service-Signature matches no secret.');
  }
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('invalid_body', 'The body is not JSON.');
  }
}
