// Backends: sqlite — how the HTTP layer closes a connection; storage plays no part
// Tier: quick

import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LINGER_IDLE_MS, LINGER_MAX_BYTES, LINGER_MAX_MS } from '../../src/http/lingering-close.js';
import { newWorkspace, startTestApp, type TestApp, type TestWorkspace } from '../helpers/app.js';

// docs/api.md#errors: an answer sent before the body is read (a 413 by Content-Length, a 401, a 404)
// is followed by a lingering close: the server closes its side, reads and discards a bounded
// remainder of the body, then closes. These are the bounds, on raw sockets against the real app.
let t: TestApp;
let port: number;
let ws: TestWorkspace;
beforeAll(async () => {
  t = await startTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
  t.app.server.on('connection', (s: net.Socket) => {
    const client = s.remotePort as number;
    s.on('close', () => serverClosed.get(client)?.(Date.now()));
  });
  ws = await newWorkspace(t);
});
afterAll(() => t?.close());

const MB = 1024 * 1024;
/** The most a loopback connection's kernel buffers hold: the receiver's tcp_rmem and the sender's tcp_wmem maxima. */
const kernelBuffers = () =>
  ['tcp_rmem', 'tcp_wmem']
    .map((f) => Number(readFileSync(`/proc/sys/net/ipv4/${f}`, 'utf8').trim().split(/\s+/)[2]))
    .reduce((a, b) => a + b, 0);
const head = (length: number, key = ws.live) =>
  `POST /v1/resources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

interface Outcome {
  answer: string;
  /** Body bytes the client got to write before the server closed. */
  written: number;
  /** Ms from the first byte of the answer to the server's close of the connection. */
  afterAnswerMs: number;
}

/** The server's side of each connection, by the client's port: resolved when the server closes it. */
const serverClosed = new Map<number, (at: number) => void>();

/**
 * Sends `headText`, then body chunks as `pace` says (given the bytes queued so far: a chunk size and
 * a gap, 'stop' to go quiet, 'end' to close our side), until the server closes its side of the
 * connection; resolves with what it answered, how much was sent and when the server closed.
 */
function drive(headText: string, pace: (queued: number) => { bytes: number; gapMs: number } | 'stop' | 'end') {
  return new Promise<Outcome>((resolve) => {
    // Half-open: the server's FIN does not end our side, so we go on sending as a real client would.
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let answer = '';
    let answeredAt = 0;
    let written = 0;
    let queued = 0;
    let closed = false;
    socket.on('data', (d) => {
      answer += d.toString('latin1');
      answeredAt ||= Date.now();
    });
    socket.on('error', () => {});
    socket.on('connect', async () => {
      serverClosed.set(socket.localPort as number, (at) => {
        closed = true;
        // Let the last write callbacks and the answer's bytes arrive.
        setTimeout(() => {
          socket.destroy();
          resolve({ answer, written, afterAnswerMs: answeredAt ? at - answeredAt : -1 });
        }, 100);
      });
      socket.write(headText);
      while (!closed) {
        const next = pace(queued);
        if (next === 'stop') return;
        if (next === 'end') return void socket.end();
        const chunk = Buffer.alloc(next.bytes, 0x20);
        queued += chunk.length;
        const ok = socket.write(chunk, (err) => {
          if (!err) written += chunk.length;
        });
        if (!ok) await new Promise((r) => socket.once('drain', r).once('close', r));
        if (next.gapMs) await new Promise((r) => setTimeout(r, next.gapMs));
      }
    });
  });
}

const expect413 = (o: Outcome) => {
  expect(o.answer).toMatch(/^HTTP\/1\.1 413 /);
  expect(o.answer).toMatch(/\r\nconnection: close\r\n/i);
  const body = o.answer.slice(o.answer.indexOf('\r\n\r\n') + 4);
  expect(JSON.parse(body).error).toMatchObject({
    code: 'payload_too_large',
    request_id: expect.stringMatching(/^req_/),
  });
};

describe('lingering close after an early answer (docs/api.md#errors)', () => {
  it('a client that never stops sending is cut after LINGER_MAX_BYTES more, having got its 413', async () => {
    const o = await drive(head(1024 * MB), () => ({ bytes: 256 * 1024, gapMs: 0 }));
    expect413(o);
    // What the server read and discarded, plus what the two kernels' buffers can hold when it closes
    // (the server's receive buffer grows up to tcp_rmem's maximum, 32 MiB on this kind of machine; the
    // client's send buffer up to tcp_wmem's), plus the body read before the 413 (the 1 MiB limit).
    expect(o.written).toBeLessThan(LINGER_MAX_BYTES + kernelBuffers() + 2 * MB);
    expect(o.afterAnswerMs).toBeLessThan(LINGER_MAX_MS + 2000);
  });

  it('a client that keeps trickling is cut at LINGER_MAX_MS', async () => {
    const o = await drive(head(50 * MB), () => ({ bytes: 1024, gapMs: LINGER_IDLE_MS / 4 }));
    expect413(o);
    expect(o.afterAnswerMs).toBeGreaterThanOrEqual(LINGER_MAX_MS - 200);
    expect(o.afterAnswerMs).toBeLessThan(LINGER_MAX_MS + 2000);
  });

  it('a client that goes quiet without closing is cut after LINGER_IDLE_MS', async () => {
    const o = await drive(head(50 * MB), (sent) => (sent < 64 * 1024 ? { bytes: 64 * 1024, gapMs: 0 } : 'stop'));
    expect413(o);
    expect(o.afterAnswerMs).toBeGreaterThanOrEqual(LINGER_IDLE_MS - 200);
    expect(o.afterAnswerMs).toBeLessThan(LINGER_IDLE_MS + 2000);
  });

  it('a client that closes its side after the answer is let go at once', async () => {
    const o = await drive(head(50 * MB), (sent) => (sent < 64 * 1024 ? { bytes: 64 * 1024, gapMs: 0 } : 'end'));
    expect413(o);
    expect(o.afterAnswerMs).toBeLessThan(LINGER_IDLE_MS);
  });

  it('a 401 before the body is read lingers the same way', async () => {
    const o = await drive(head(10 * MB, 'svc_live_nope'), (sent) =>
      sent < 10 * MB ? { bytes: 256 * 1024, gapMs: 0 } : 'end',
    );
    expect(o.answer).toMatch(/^HTTP\/1\.1 401 /);
    // The whole body went out: the server read it instead of resetting the connection.
    expect(o.written).toBe(10 * MB);
  });
});
