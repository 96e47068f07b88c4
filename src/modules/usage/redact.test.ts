// Backends: sqlite — pure functions, no storage
// Tier: quick
import { describe, expect, it } from 'vitest';
import { isSecretName, loggableBody, loggablePath } from './redact.js';

describe('request log redaction (docs/usage.md#request-log)', () => {
  it('names: stems anywhere, words alone', () => {
    for (const n of ['pwd', 'passwd', 'newPassword', 'PASSWORD', 'clientsecret', 'x-api-key', 'APIKey', 'private_key'])
      expect(isSecretName(n), n).toBe(true);
    for (const n of ['key', 'sessionId', 'pin_code', 'otp', 'auth', 'refresh.token', 'Cookie', 'signature'])
      expect(isSecretName(n), n).toBe(true);
    for (const n of ['name', 'passport', 'monkey', 'keyboard', 'author', 'pinned', 'metadata', 'url'])
      expect(isSecretName(n), n).toBe(false);
  });

  it('replaces whole values, nested ones too, and keeps the text as received', () => {
    expect(loggableBody('{ "a" : 1, "token" : {"x": [1, {"y": "}"}]}, "b": "c"}')).toBe(
      '{ "a" : 1, "token" : "[redacted]", "b": "c"}',
    );
    expect(loggableBody('{"m":{"inner":{"pin":42}},"pwd":null,"key":""}')).toBe(
      '{"m":{"inner":{"pin":"[redacted]"}},"pwd":null,"key":""}',
    );
    // An escaped name is read as JSON reads it; a value cut off by a broken body goes whole.
    expect(loggableBody('{"pass\\u0077ord":"x1","secret":"unterminated')).toBe(
      '{"pass\\u0077ord":"[redacted]","secret":"[redacted]"',
    );
    expect(loggableBody('{"secret":[1,2')).toBe('{"secret":"[redacted]"');
    // A string value followed by a colon is not a name: only members are looked at.
    expect(loggableBody('["token", "password": 1]')).toBe('["token", "password": "[redacted]"]');
  });

  it('URL user-info, escaped slashes included', () => {
    expect(loggableBody({ u: 'https://a:b@h.example/x', v: 'mailto:ada@example.com' })).toBe(
      '{"u":"https://[redacted]@h.example/x","v":"mailto:ada@example.com"}',
    );
    expect(loggableBody('{"u":"https:\\/\\/tok@h.example"}')).toBe('{"u":"https:\\/\\/[redacted]@h.example"}');
  });

  it('paths: secret segments, encoded or not; never the query', () => {
    expect(loggablePath('/v1/keys/svc_live_AbC123?x=svc_test_Zz9')).toBe('/v1/keys/[redacted]');
    expect(loggablePath('/v1/webhooks/whsec_a%2Bb%3D')).toBe('/v1/webhooks/[redacted]');
    expect(loggablePath('/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R')).toBe(
      '/v1/resources/res_01JD3K8Z6W6J9Q4X1V5N2M7P8R',
    );
    expect(loggablePath('/v1/users/ada%40example.com/x%zz')).toBe('/v1/users/[redacted]/x%zz');
  });
});
