import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret } from '../webhooks/webhooks.service.js';
import { deliveryHeaders, serviceSignature } from './signing.js';

// Backends: sqlite — delivery signatures, pure
// Tier: quick

describe('delivery signatures (docs/api.md#webhook-deliveries)', () => {
  const secret = newWebhookSecret();
  const body = JSON.stringify({
    id: 'evt_1',
    event: 'resource.created',
    created_at: '2026-11-22T10:15:30.123Z',
    data: { é: '✓' },
  });

  it('X-Service-Signature is the hex HMAC-SHA256 of the body keyed with the secret string', () => {
    const expected = createHmac('sha256', secret).update(body).digest('hex');
    expect(serviceSignature(secret, body)).toBe(expected);
    expect(serviceSignature(secret, `${body} `)).not.toBe(expected);
  });

  it('the Standard Webhooks headers verify with the standardwebhooks package', () => {
    const now = Date.now();
    const headers = deliveryHeaders([secret], 'evt_1', body, now);
    expect(headers['webhook-timestamp']).toBe(String(Math.floor(now / 1000)));
    const verified = new Webhook(secret).verify(body, headers);
    expect(verified).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
  });

  it('during a rotation: one signature per live secret, each verifies; X-Service-Signature uses the old one until it expires', () => {
    const older = newWebhookSecret();
    const headers = deliveryHeaders([secret, older], 'evt_2', body, Date.now());
    const parts = headers['webhook-signature']?.split(' ') ?? [];
    expect(parts).toHaveLength(2);
    expect(parts.every((p) => p.startsWith('v1,'))).toBe(true);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(older).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
    expect(headers['x-service-signature']).toBe(serviceSignature(older, body));
    expect(headers['x-service-signature']).not.toBe(serviceSignature(secret, body));
    // Once the old secret is no longer live, the new one keys it.
    expect(deliveryHeaders([secret], 'evt_2', body, Date.now())['x-service-signature']).toBe(
      serviceSignature(secret, body),
    );
  });
});
