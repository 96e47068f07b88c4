import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createServices } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { databaseUrlOf, startApi, startWsvc, stopProcess, type WsvcProcess } from '../helpers/processes.js';
import { startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — the worker process stays up on each driver (on SQLite nothing but a timer held it)
// Tier: full — API and worker child processes and a SIGTERM
// `wsvc worker` is a long-running process on every backend. On SQLite nothing but its (unref'd)
// poll timer used to hold Node's event loop, so it exited 0 about 2 s after "delivery worker
// started" and events written later by another process were never delivered.

let storage: Awaited<ReturnType<typeof openTestStorage>>;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let worker: WsvcProcess | undefined;
let api: Awaited<ReturnType<typeof startApi>> | undefined;

beforeAll(async () => {
  storage = await openTestStorage();
  rx = await startReceiver();
});
afterAll(async () => {
  if (worker) await stopProcess(worker.child, 'SIGKILL');
  if (api) await stopProcess(api.child, 'SIGKILL');
  await rx.close();
  await storage.close();
});

describe('wsvc worker (a separate process)', () => {
  it('stays up while idle, delivers an event another process wrote, and stops on SIGTERM', async () => {
    const config = loadConfig(
      {},
      {
        SECRETS_KEY: process.env.SECRETS_KEY || undefined,
        DATABASE_URL: storage.url,
        LOG_LEVEL: 'silent',
        PLAN_LIMITS: 'off',
      },
    );
    const services = createServices({ storage, clock: systemClock, config });
    const ws = await services.workspaces.create(asCli(services), { name: 'Worker', adminEmail: 'worker@example.test' });
    const key = ws.keys.live.key;
    // Default poll and timing settings: only what a test receiver on loopback needs.
    const env = { DATABASE_URL: databaseUrlOf(storage), PORT: '0', WEBHOOK_ALLOW_INSECURE_URLS: 'true', REDIS_URL: '' };

    worker = await startWsvc(['worker'], env);
    await sleep(4_000); // past the point where it used to exit with nothing pending
    expect({ code: worker.child.exitCode, signal: worker.child.signalCode }).toEqual({ code: null, signal: null });

    api = await startApi(env);
    const call = async (path: string, body: unknown) => {
      const res = await fetch(`${api?.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as { data: { id: string } } };
    };
    expect((await call('/v1/webhooks', { url: rx.url('/in'), events: ['*'] })).status).toBe(201);
    const created = await call('/v1/resources', { name: 'late', type: 'standard' });
    expect(created.status).toBe(201);

    await rx.until((r) => r.length >= 1, 20_000);
    const got = JSON.parse(rx.received[0]?.body ?? '{}') as { event: string; data: { resource_id: string } };
    expect(got.event).toBe('resource.created');
    expect(got.data.resource_id).toBe(created.body.data.id);

    const exited = new Promise<number | null>((r) => worker?.child.once('exit', (code) => r(code)));
    worker.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(worker.output()).toMatch(/"msg":"delivery worker stopped"/);
    expect(worker.output()).toMatch(/"succeeded":1/);
    worker = undefined;
  }, 60_000);
});
