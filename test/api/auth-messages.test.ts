// Backends: both — a well-formed key is looked up in storage; the malformed ones are refused before
// Tier: quick
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';
import { expectError } from '../helpers/expect.js';

// docs/api.md#authentication-details: a 401 says what is wrong with the Authorization header and
// how to fix it, without repeating the credential.
let t: TestApp;
let ws: TestWorkspace;
beforeAll(async () => {
  t = await startTestApp();
  ws = await newWorkspace(t);
});
afterAll(() => t?.close());

const call = (authorization: string) => t.request({ method: 'GET', url: '/v1/resources', headers: { authorization } });

describe('401 messages name the fix (docs/api.md#authentication-details)', () => {
  it('a key without `Bearer `', async () => {
    const err = expectError(await call(ws.live), 401, 'invalid_token');
    expect(err.message).toBe(
      'The Authorization header must be exactly `Bearer <API_KEY>`: put `Bearer ` before the key.',
    );
  });

  it('another scheme, a lower-case bearer, extra spaces', async () => {
    expect(expectError(await call(`Basic ${btoa('ada:pw')}`), 401, 'invalid_token').message).toBe(
      'The Authorization header must be exactly `Bearer <API_KEY>`; this one uses the Basic scheme.',
    );
    expect(expectError(await call(`bearer ${ws.live}`), 401, 'invalid_token').message).toBe(
      'The Authorization header must be exactly `Bearer <API_KEY>`, with a capital B.',
    );
    expect(expectError(await call(`Bearer  ${ws.live}`), 401, 'invalid_token').message).toBe(
      'The Authorization header must be exactly `Bearer <API_KEY>`: one space after `Bearer`, then the whole key and nothing else.',
    );
  });

  it('a cut key, an unknown key; no message repeats the credential', async () => {
    const cut = expectError(await call(`Bearer ${ws.live.slice(0, 20)}`), 401, 'invalid_token');
    expect(cut.message).toMatch(/^The API key is malformed: keys are svc_live_ or svc_test_ followed by 43/);
    const unknown = expectError(await call(`Bearer svc_live_${'A'.repeat(43)}`), 401, 'invalid_token');
    expect(unknown.message).toMatch(/^No API key matches: check that the whole key was copied/);
    for (const m of [cut.message, unknown.message]) expect(m).not.toContain(ws.live.slice(9, 20));
  });
});
