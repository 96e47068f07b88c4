import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got: headers and the exact body bytes as text. */
export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What a path answers: a status (and body, after `delayMs`), or `hang` (never answers). */
export type Reply = { status: number; body?: string; headers?: Record<string, string>; delayMs?: number } | 'hang';

/**
 * A real HTTP webhook receiver on loopback. `plan(path, replies)` scripts the answers of a path in
 * order (the last one repeats); unplanned paths answer 200; a `handler` decides every answer
 * instead. Every request is recorded.
 */
export async function startReceiver(handler?: (r: Received) => Reply) {
  const received: Received[] = [];
  const plans = new Map<string, Reply[]>();
  const hanging = new Set<http.ServerResponse>();
  let connections = 0;
  const waiters: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      for (const w of waiters.splice(0)) w();
      const plan = plans.get(path);
      const got = received[received.length - 1] as Received;
      const reply = handler
        ? handler(got)
        : plan
          ? plan.length > 1
            ? (plan.shift() as Reply)
            : plan[0]
          : { status: 200, body: 'ok' };
      if (reply === 'hang' || reply === undefined) {
        hanging.add(res);
        return;
      }
      const answer = () => {
        res.writeHead(reply.status, reply.headers);
        res.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    received,
    get connections() {
      return connections;
    },
    /** How many requests are being held open by `hang`. */
    get hangingCount() {
      return [...hanging].filter((r) => !r.destroyed && !r.writableEnded && !r.socket?.destroyed).length;
    },
    plan(path: string, replies: Reply[]) {
      plans.set(path, [...replies]);
    },
    /** Requests to `path` so far. */
    to(path: string) {
      return received.filter((r) => r.path === path);
    },
    /** Resolves once `predicate` holds for the requests received (checked on each arrival), or rejects after `ms`. */
    async until(predicate: (r: Received[]) => boolean, ms = 10_000): Promise<void> {
      const deadline = Date.now() + ms;
      while (!predicate(received)) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`receiver: condition not met after ${ms} ms (${received.length} requests)`);
        await new Promise<void>((r) => {
          const t = setTimeout(r, Math.min(left, 50));
          waiters.push(() => {
            clearTimeout(t);
            r();
          });
        });
      }
    },
    async close() {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** Polls `check` until it returns a value other than undefined/false, or throws after `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`eventually: not true after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
