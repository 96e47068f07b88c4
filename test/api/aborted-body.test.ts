// Backends: both — on PostgreSQL a connection error of the database opens its breaker; a client's must not
// Tier: quick

import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';

// A client that drops its connection in the middle of a body makes Node's request stream fail with
// ECONNRESET ("aborted"). That is the client's connection, not the database's: the requests after it
// are served as usual, they are not answered 503 as if PostgreSQL were unreachable (src/db/breaker.ts).
let t: TestApp;
let port: number;
let ws: TestWorkspace;
beforeAll(async () => {
  t = await startTestApp({ config: { HTTP_REQUEST_TIMEOUT_MS: 1500, HTTP_HEADERS_TIMEOUT_MS: 1000 } });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
  ws = await newWorkspace(t);
});
afterAll(() => t?.close());

const head = (length: number) =>
  `POST /v1/resources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ws.live}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

/** Sends part of a body, then `end` says how the client goes: it hangs up, or it waits out the request timeout. */
async function partialBody(end: 'hang up' | 'time out'): Promise<void> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise<void>((r) => socket.once('connect', () => r()));
  socket.write(`${head(1000)}{"name":"half`);
  await new Promise((r) => setTimeout(r, end === 'hang up' ? 200 : 3000));
  socket.destroy();
  await new Promise((r) => setTimeout(r, 200));
}

describe('a client that abandons its body', () => {
  for (const end of ['hang up', 'time out'] as const) {
    it(`(${end}) does not stop the next requests`, async () => {
      await partialBody(end);
      const res = await t.request({
        method: 'POST',
        url: '/v1/resources',
        key: ws.live,
        body: { name: 'after', type: 'standard' },
      });
      expect(res.statusCode, res.body).toBe(201);
    });
  }
});
