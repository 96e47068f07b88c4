// Backends: both — passkeys, their challenges (5 minutes, once), pending sign-ins and sessions are rows in the database
// Tier: quick
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { json, startTestApp, type TestApp } from '../helpers/app.js';
import { type ConsoleClient, ORIGIN } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { type SoftAuthenticator, softAuthenticator } from '../helpers/passkey-authenticator.js';
import { adminOf, clientOf, manualClock, postPassword, postSecondFactor } from '../helpers/two-factor.js';

// Passkeys over HTTP (docs/sign-in.md#passkeys), with a software authenticator
// (test/helpers/passkey-authenticator.ts) answering the server's WebAuthn options as a browser would:
// added, listed, signing in without an email and as the second factor, and, once removed, refused
// though the authenticator still holds it. The same journey in Chromium with its virtual
// authenticator is test/console/team-sign-in.test.ts (SQLite).
vi.setConfig({ testTimeout: 60_000 });

const clock = manualClock(Date.now());
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ clock, config: { PUBLIC_URL: ORIGIN } });
});
afterAll(() => t.close());

const publicCall = (url: string, body?: unknown) =>
  t.request({ method: 'POST', url, body, headers: { origin: ORIGIN } });

/** Adds a passkey named `name` for the signed-in person; returns its id. */
async function addPasskey(client: ConsoleClient, auth: SoftAuthenticator, name: string): Promise<string> {
  const options = await client.call({ method: 'POST', url: '/console/api/passkeys/options' });
  expect(options.statusCode, options.body).toBe(200);
  const added = await client.call({
    method: 'POST',
    url: '/console/api/passkeys',
    body: { name, response: auth.create(json(options).data) },
  });
  expect(added.statusCode, added.body).toBe(201);
  return json(added).data.id;
}

/** "Sign in with a passkey": options with no email, the authenticator's answer, the session (or the refusal). */
async function passkeySignIn(auth: SoftAuthenticator, credentialId?: string) {
  const options = await publicCall('/console/api/session/passkey/options');
  expect(options.statusCode, options.body).toBe(200);
  return publicCall('/console/api/session/passkey', { response: auth.get(json(options).data, { credentialId }) });
}

describe('passkeys over HTTP (docs/sign-in.md#passkeys)', () => {
  it('added from the options and the response, listed by name; the same response again is refused (a challenge works once)', async () => {
    const { client } = await adminOf(t, 'Keys');
    const auth = softAuthenticator(ORIGIN);
    const options = await client.call({ method: 'POST', url: '/console/api/passkeys/options' });
    const opts = json(options).data;
    // A discoverable credential with user verification, for this site.
    expect(opts.authenticatorSelection).toMatchObject({ residentKey: 'required', userVerification: 'required' });
    expect(opts.rp.id).toBe(new URL(ORIGIN).hostname);
    const response = auth.create(opts);
    const added = await client.call({
      method: 'POST',
      url: '/console/api/passkeys',
      body: { name: 'Laptop', response },
    });
    expect(added.statusCode, added.body).toBe(201);
    expect(json(added).data).toMatchObject({ name: 'Laptop', last_used_at: null });
    const replay = await client.call({
      method: 'POST',
      url: '/console/api/passkeys',
      body: { name: 'Again', response },
    });
    expectError(replay, 400, 'validation_error');
    expect(replay.body).toContain('expired or was used');
    const status = await client.call({ method: 'GET', url: '/console/api/two-factor' });
    expect(json(status).data.passkeys.map((p: { name: string }) => p.name)).toEqual(['Laptop']);
    // A response made for another origin is not this site's.
    const other = await client.call({ method: 'POST', url: '/console/api/passkeys/options' });
    const foreign = await client.call({
      method: 'POST',
      url: '/console/api/passkeys',
      body: { name: 'Phish', response: auth.create(json(other).data, 'http://evil.example') },
    });
    expectError(foreign, 400, 'validation_error');
    expect(foreign.body).toContain('could not be verified');
    expect(json(await client.call({ method: 'GET', url: '/console/api/two-factor' })).data.passkeys).toHaveLength(1);
  });

  it('signs in without an email (a discoverable credential): a session whose method is passkey; an assertion works once', async () => {
    const { client, email } = await adminOf(t, 'Alone');
    const auth = softAuthenticator(ORIGIN);
    await addPasskey(client, auth, 'Phone');
    const options = await publicCall('/console/api/session/passkey/options');
    const response = auth.get(json(options).data);
    const ok = await publicCall('/console/api/session/passkey', { response });
    const session = clientOf(t, ok).session;
    expect(session).toMatchObject({ email, method: 'passkey', stage: 'full' });
    // The same assertion again: its challenge was used.
    expectError(await publicCall('/console/api/session/passkey', { response }), 401, 'passkey_refused');
    const listed = json(await client.call({ method: 'GET', url: '/console/api/two-factor' })).data.passkeys;
    expect(listed[0].last_used_at).not.toBeNull();
  });

  it('stands as the second factor after the password, for that person only', async () => {
    const { client, email } = await adminOf(t, 'Second');
    const auth = softAuthenticator(ORIGIN);
    await addPasskey(client, auth, 'Laptop');
    const first = await postPassword(t, email);
    expect(first.statusCode, first.body).toBe(202);
    const pending = json(first).data;
    expect(pending.methods).toContain('passkey');
    const options = await publicCall('/console/api/session/second-factor/passkey-options', { token: pending.token });
    expect(options.statusCode, options.body).toBe(200);
    expect(json(options).data.allowCredentials.map((c: { id: string }) => c.id)).toEqual(auth.credentials());
    // Another person's passkey is not this person's second factor.
    const { client: otherClient } = await adminOf(t, 'Other');
    const otherAuth = softAuthenticator(ORIGIN);
    await addPasskey(otherClient, otherAuth, 'Theirs');
    const wrong = await postSecondFactor(t, {
      token: pending.token,
      passkey: otherAuth.get({ ...json(options).data, allowCredentials: [] }),
    });
    expect(wrong.statusCode).toBe(401);
    const again = await publicCall('/console/api/session/second-factor/passkey-options', { token: pending.token });
    const ok = await postSecondFactor(t, { token: pending.token, passkey: auth.get(json(again).data) });
    expect(clientOf(t, ok).session).toMatchObject({ email, method: 'password+passkey', stage: 'full' });
  });

  it('removed, it signs in no more though the authenticator still holds it: 401 passkey_refused', async () => {
    const { client, email } = await adminOf(t, 'Removed');
    const auth = softAuthenticator(ORIGIN);
    const id = await addPasskey(client, auth, 'Old laptop');
    expect((await passkeySignIn(auth)).statusCode).toBe(201);
    const removed = await client.call({ method: 'DELETE', url: `/console/api/passkeys/${id}` });
    expect(removed.statusCode, removed.body).toBe(204);
    expect(auth.credentials()).toHaveLength(1);
    expectError(await passkeySignIn(auth), 401, 'passkey_refused');
    // Nor as the second factor: with no factor left, the password alone signs in.
    const first = await postPassword(t, email);
    expect(first.statusCode, first.body).toBe(201);
    expect(json(first).data.method).toBe('password');
  });
});
