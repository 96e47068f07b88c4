// Backends: sqlite — walks the schemas and the examples in memory; no storage.
// Tier: quick — milliseconds.
// No event carries key material, a secret, a token or a hash (docs/api.md#platform-events, #operator-events): every
// catalogue type's `data` schema and its example (what a test event sends), and every operator type's schema, are
// walked, and the walk itself is shown finding each kind of secret planted on purpose.
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { ALL_EVENT_TYPES, OPERATOR_EVENT_TYPES, PLATFORM_EVENT_TYPES } from '../../src/kernel/event-types.js';
import { exampleEventData } from '../../src/modules/events/event-examples.js';
import { EVENT_DATA, EventSchema } from '../../src/modules/events/events.schemas.js';
import { OPERATOR_EVENT_DATA, OperatorEventSchema } from '../../src/modules/operator-events/operator-events.schemas.js';
import { schemaSecrets, valueSecrets } from '../helpers/event-secrets.js';

const ctx = {
  workspaceId: 'ws_01JD3K8Z6W6J9Q4X1V5N2M7P8A',
  webhookId: 'wh_01JD3K8Z6W6J9Q4X1V5N2M7P8B',
  now: Date.now(),
};

describe('no secrets in events', () => {
  it.each([...ALL_EVENT_TYPES])('%s: neither its data schema nor its example holds one', (type) => {
    expect(schemaSecrets(EVENT_DATA[type])).toEqual([]);
    expect(valueSecrets(exampleEventData(type, ctx))).toEqual([]);
  });

  it('the event object itself (every member of the union) holds none', () => {
    expect(schemaSecrets(EventSchema)).toEqual([]);
    const members = (EventSchema as unknown as { anyOf: unknown[] }).anyOf;
    expect(members).toHaveLength(ALL_EVENT_TYPES.length);
    expect(PLATFORM_EVENT_TYPES.length).toBeGreaterThan(0);
  });

  it.each([...OPERATOR_EVENT_TYPES])('operator event %s: its data schema holds none', (type) => {
    expect(schemaSecrets(OPERATOR_EVENT_DATA[type])).toEqual([]);
  });

  it('the operator event object (every member of its union) holds none', () => {
    expect(schemaSecrets(OperatorEventSchema)).toEqual([]);
    expect((OperatorEventSchema as unknown as { anyOf: unknown[] }).anyOf).toHaveLength(OPERATOR_EVENT_TYPES.length);
  });

  it('the walk finds each kind of secret planted on purpose', () => {
    const planted = Type.Object({
      key: Type.String(),
      webhook: Type.Object({ secret: Type.String(), url: Type.String() }),
      member: Type.Object({ password_hash: Type.String() }),
      items: Type.Array(Type.Object({ token: Type.String() })),
      either: Type.Union([Type.Object({ key_digest: Type.String() }), Type.Null()]),
    });
    expect(schemaSecrets(planted).sort()).toEqual(
      [
        'data.key: key material',
        'data.webhook.secret: its name says it holds a secret',
        'data.webhook.url: its name says it holds a secret',
        'data.member.password_hash: its name says it holds a secret',
        'data.items[].token: its name says it holds a secret',
        'data.either.key_digest: its name says it holds a secret',
      ].sort(),
    );
    expect(
      valueSecrets({
        key: { id: 'key_1', name: 'svc_live_AbC1dEf2GhI3jKl4MnO5pQr6StU7vWx8YzA9bCd0EfG' },
        note: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
        sha: 'a'.repeat(64),
        pw: '$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA',
        where: 'https://example.com/set-password?t=abc',
        auth: 'Bearer abc',
      }),
    ).toEqual([
      'data.key.name: looks like an API key',
      'data.note: looks like a webhook secret',
      'data.sha: looks like a hex digest',
      'data.pw: looks like a password hash',
      'data.where: looks like a link',
      'data.auth: looks like a bearer token',
    ]);
  });
});
