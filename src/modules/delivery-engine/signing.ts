import { createHmac } from 'node:crypto';

/** Delivery signature: `X-Service-Signature`, hex HMAC-SHA256 of the exact body, keyed with the secret's UTF-8 bytes. */
export function serviceSignature(secret: string, body: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(body, 'utf8').digest('hex');
}

/**
 * docs/api.md#webhook-deliveries: Standard Webhooks `webhook-signature`: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`,
 * keyed with the base64-decoded part of the `whsec_` secret.
 */
export function standardSignature(secret: string, id: string, timestampS: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestampS}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}

/**
 * Every header of one delivery attempt (docs/api.md#webhook-deliveries); `nowMs` becomes `webhook-timestamp`. `secrets` are
 * the live ones, newest first: each gives one Standard Webhooks signature (space-separated, as the
 * standard allows during a rotation). `X-Service-Signature` holds one value only, so it uses the
 * oldest live secret: after a rotation it stays keyed with the old secret until that expires, and a
 * receiver that knows only the old one keeps working through the overlap (docs/api.md#webhooks).
 */
export function deliveryHeaders(
  secrets: readonly [string, ...string[]],
  eventId: string,
  body: string,
  nowMs: number,
): Record<string, string> {
  const ts = Math.floor(nowMs / 1000);
  const oldest = secrets[secrets.length - 1] ?? secrets[0];
  return {
    'content-type': 'application/json',
    'user-agent': 'workspace-service-webhooks/1',
    'x-service-signature': serviceSignature(oldest, body),
    'webhook-id': eventId,
    'webhook-timestamp': String(ts),
    'webhook-signature': secrets.map((s) => standardSignature(s, eventId, ts, body)).join(' '),
  };
}
