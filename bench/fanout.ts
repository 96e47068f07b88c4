// Benchmark (docs/performance.md#method): webhook fan-out scenario: a real `wsvc serve` child process (API + in-process delivery
// worker) on a fresh database, M webhook endpoints on a loopback receiver in this process.
// Deliveries per second: N events committed before the server starts, timed from its start until
// the last of the N × M deliveries arrives (server start-up, ~0.5 s, included). Event-commit →
// first-attempt latency (p50/p99): events created one at a time through the API afterwards, from
// the event's created_at to the arrival of its delivery.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.js';
import { openStorage } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/kernel/clock.js';
import { systemActor } from '../src/kernel/principal.js';
import { createServices } from '../src/services.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface FanoutResult {
  endpoints: number;
  latencyEvents: number;
  burstEvents: number;
  deliveries: number;
  deliveriesPerSec: number;
  firstAttemptP50: number;
  firstAttemptP99: number;
  duplicates: number;
  non2xx: number;
  rssMb: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** A loopback receiver that answers 204 and records each event id's first arrival. */
async function startReceiver() {
  const arrivals = new Map<string, number[]>();
  let count = 0;
  let onArrival: (() => void) | undefined;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; created_at: string };
      const key = `${req.url} ${body.id}`;
      const list = arrivals.get(key) ?? [];
      list.push(at - Date.parse(body.created_at));
      arrivals.set(key, list);
      count++;
      res.writeHead(204).end();
      onArrival?.();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    arrivals,
    get count() {
      return count;
    },
    /** Resolves once `n` requests arrived in all (rejects after `ms`). */
    until(n: number, ms: number): Promise<void> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`fan-out: ${count}/${n} deliveries after ${ms} ms`)), ms);
        const check = () => {
          if (count >= n) {
            clearTimeout(timer);
            onArrival = undefined;
            resolve();
          }
        };
        onArrival = check;
        check();
      });
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = http.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Starts `wsvc serve` (LOG_LEVEL=warn: no per-request logs) and waits for /healthz. */
async function startServer(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string; rssMb(): number }> {
  const port = await freePort();
  // FANOUT_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the server.
  const nodeArgs = process.env.FANOUT_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, 'bin/wsvc.js', 'serve'], {
    cwd: ROOT,
    // Plan limits off: the fan-out makes more webhooks than the free plan allows.
    env: { ...process.env, LOG_LEVEL: 'warn', PLAN_LIMITS: 'off', ...env, PORT: String(port) },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wsvc serve exited ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    if (Date.now() > deadline) throw new Error('wsvc serve did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    url,
    rssMb() {
      const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0);
      return Math.round(kb / 1024);
    },
  };
}

/** Runs the fan-out scenario; `databaseUrl` defaults to a fresh SQLite file (WAL + synchronous=FULL). */
export async function runFanout(opts: {
  endpoints?: number;
  latencyEvents?: number;
  burstEvents?: number;
  databaseUrl?: string;
}): Promise<FanoutResult> {
  const endpoints = opts.endpoints ?? 5;
  const latencyEvents = opts.latencyEvents ?? 200;
  const burstEvents = opts.burstEvents ?? 2000;
  const dir = mkdtempSync(join(tmpdir(), 'wsvc-fanout-'));
  const url = opts.databaseUrl ?? `sqlite:${join(dir, 'bench.db')}`;
  const rx = await startReceiver();
  const config = loadConfig(
    {},
    {
      DATABASE_URL: url,
      SECRETS_KEY: process.env.SECRETS_KEY || undefined,
      LOG_LEVEL: 'silent',
      WEBHOOK_ALLOW_INSECURE_URLS: true,
      PLAN_LIMITS: 'off',
    },
  );
  const storage = openStorage({ url, poolSize: 2 });
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    await migrateToLatest(storage.db, storage.dialect);
    const services = createServices({ storage, clock: systemClock, config });
    const ws = await services.workspaces.create(services.uow.as(systemActor('cli')), {
      name: 'fanout',
      adminEmail: 'fanout@example.com',
    });
    const verified = await services.keyRegistry.verify(`Bearer ${ws.keys.live.key}`);
    if (!verified.ok) throw new Error('seed key does not verify');
    for (let i = 0; i < endpoints; i++) {
      await services.webhooks.create(services.uow.as(verified.principal), {
        url: `http://127.0.0.1:${rx.port}/e${i}`,
        events: ['*'],
      });
    }
    // The burst's events are committed before the server starts: N × M deliveries are due at
    // once, so the drain measures the delivery engine alone, not the API creating events.
    for (let i = 0; i < burstEvents; i++) {
      await services.resources.create(services.uow.as(verified.principal), { name: `burst${i}`, type: 'standard' });
    }
    await storage.close();
    const started = performance.now();
    server = await startServer({
      DATABASE_URL: url,
      WEBHOOK_ALLOW_INSECURE_URLS: 'true',
      RATE_LIMIT_LIVE: '100000000',
    });
    const deliveries = burstEvents * endpoints;
    await rx.until(deliveries, 300_000);
    const elapsed = (performance.now() - started) / 1000;

    // Latency: then one event at a time through the API, each awaited with its deliveries.
    const base = server.url;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let non2xx = 0;
    const create = (i: number) =>
      new Promise<void>((resolve, reject) => {
        const req = http.request(`${base}/v1/resources`, {
          method: 'POST',
          agent,
          headers: { authorization: `Bearer ${ws.keys.live.key}`, 'content-type': 'application/json' },
        });
        req.on('response', (res) => {
          if (res.statusCode !== 201) non2xx++;
          res.resume();
          res.on('end', () => resolve());
        });
        req.on('error', reject);
        req.end(JSON.stringify({ name: `r${i}`, type: 'standard' }));
      });
    const firstLatency = new Set(rx.arrivals.keys());
    for (let i = 0; i < latencyEvents; i++) {
      await create(i);
      await rx.until(deliveries + (i + 1) * endpoints, 30_000);
    }
    agent.destroy();
    const latencies = [...rx.arrivals.entries()]
      .filter(([k]) => !firstLatency.has(k))
      .map(([, l]) => l[0] ?? 0)
      .sort((a, b) => a - b);
    return {
      endpoints,
      latencyEvents,
      burstEvents,
      deliveries,
      deliveriesPerSec: Math.round(deliveries / elapsed),
      firstAttemptP50: percentile(latencies, 50),
      firstAttemptP99: percentile(latencies, 99),
      duplicates: rx.count - rx.arrivals.size,
      non2xx,
      rssMb: server.rssMb(),
    };
  } finally {
    if (server) {
      const s = server;
      await new Promise<void>((r) => {
        s.child.once('exit', () => r());
        s.child.kill('SIGTERM');
      });
    }
    await rx.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// `node --import tsx bench/fanout.ts [endpoints] [burstEvents]`: this scenario alone.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const endpoints = Number(process.argv[2] ?? 5);
  const burstEvents = Number(process.argv[3] ?? 2000);
  console.log(JSON.stringify(await runFanout({ endpoints, burstEvents })));
}
