import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createSender, IDLE_SOCKET_MS } from './http-send.js';

// Backends: sqlite — the HTTP sender's kept-alive sockets and URL check against a loopback server, no storage
// Tier: quick
// The sender's idle kept-alive sockets (docs/api.md#webhook-deliveries): closed by the sender before common
// server keep-alive timeouts, without cutting an answer that takes longer than that idle time. Its URL check
// (docs/api.md#webhook-urls): what it refuses, with and without WEBHOOK_ALLOW_INSECURE_URLS, and how it says so.

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

describe('kept-alive sockets', () => {
  it("the default idle time is below the keep-alive of Node's HTTP server", () => {
    expect(IDLE_SOCKET_MS).toBeLessThan(new http.Server().keepAliveTimeout);
  });

  it('an idle socket is closed by the sender after idleSocketMs; a slower answer is not cut', async () => {
    let connections = 0;
    const closes: Promise<{ endedByClient: boolean }>[] = [];
    server = http.createServer((req, res) => {
      req.resume();
      // Three times the idle time of the sender below: in use, the socket is not idle.
      req.on('end', () => setTimeout(() => res.writeHead(200).end('slow'), 300));
    });
    server.keepAliveTimeout = 60_000; // the receiver would keep it a minute: only the sender closes it
    server.on('connection', (socket) => {
      connections++;
      let endedByClient = false;
      socket.on('end', () => {
        endedByClient = true;
      });
      closes.push(new Promise((r) => socket.on('close', () => r({ endedByClient }))));
    });
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const send = createSender({ timeoutMs: 5000, allowInsecure: true, idleSocketMs: 100 });

    const r = await send(url, {}, '{}');
    expect(r).toMatchObject({ ok: true, status: 200, body: 'slow', error: null });
    expect(connections).toBe(1);
    const closed = await Promise.race([
      closes[0],
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('idle socket still open after 5 s')), 5000)),
    ]);
    expect(closed?.endedByClient).toBe(true);
    // The next attempt dials again.
    expect((await send(url, {}, '{}')).ok).toBe(true);
    expect(connections).toBe(2);
  });
});

describe('the URL check on the address dialled (docs/api.md#webhook-urls)', () => {
  it('refuses http:// without the setting, naming the setting and the process that needs it', async () => {
    let connections = 0;
    server = http.createServer((_req, res) => res.end());
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const r = await createSender({ timeoutMs: 5000, allowInsecure: false })(url, {}, '{}');
    expect(r).toMatchObject({
      ok: false,
      status: null,
      error:
        'refused: url is not https://: http:// is delivered only when the process that delivers (`wsvc worker`, or ' +
        '`wsvc serve` without --api-only) has WEBHOOK_ALLOW_INSECURE_URLS=true, for local development only',
    });
    expect(connections).toBe(0);
    // With the setting: delivered.
    expect((await createSender({ timeoutMs: 5000, allowInsecure: true })(url, {}, '{}')).ok).toBe(true);
    expect(connections).toBe(1);
  });

  it.each([
    'http://169.254.169.254/latest/meta-data/',
    'http://2852039166/latest',
    'http://[::ffff:169.254.169.254]/latest',
    'http://[fd00:ec2::254]/latest',
    'http://[fe80::1]/',
  ])('refuses %s with the setting on, before dialling', async (url) => {
    const r = await createSender({ timeoutMs: 5000, allowInsecure: true })(url, {}, '{}');
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(
      /^blocked: refusing to connect to \S+: a link-local or cloud metadata address, refused whatever the settings/,
    );
  });
});
