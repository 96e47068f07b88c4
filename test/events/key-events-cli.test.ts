// Backends: both — the key events are written by the outbox in the CLI process's transaction and delivered by the worker
// Tier: full — three `wsvc` child processes (over a second of CPU each to start)
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { json, startTestApp, type TestApp } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';
import { adminOf } from '../helpers/two-factor.js';
import { testWorker } from '../helpers/worker.js';

// docs/api.md#platform-events: `key.created`, `key.rolled` and `key.revoked` made through the CLI door (`wsvc keys
// create|roll|revoke`, child processes on the test database) reach a subscribed endpoint once each, signed.
const exec = promisify(execFile);

let storage: Awaited<ReturnType<typeof openTestStorage>>;
let t: TestApp;
let rx: Receiver;
let databaseUrl: string;
beforeAll(async () => {
  storage = await openTestStorage();
  t = await startTestApp({ storage, config: { WEBHOOK_ALLOW_INSECURE_URLS: true } });
  rx = await startReceiver();
  const schema = storage.schema;
  databaseUrl = schema ? `${storage.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}` : storage.url;
});
afterAll(async () => {
  await rx?.close();
  await t?.close();
  await storage?.close();
});

const wsvc = async (...args: string[]) =>
  JSON.parse(
    (
      await exec(process.execPath, ['bin/wsvc.js', '--json', ...args], {
        env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
      })
    ).stdout,
  );

describe('key events through the CLI', { timeout: 180_000 }, () => {
  it('wsvc keys create, roll and revoke each reach a subscribed endpoint once', async () => {
    const a = await adminOf(t, 'Key events CLI');
    const adminKey = await t.services.keyRegistry.create(t.services.uow.as(systemActor('cli')), {
      userId: a.userId,
      env: 'live',
      name: 'admin',
      scopes: null,
    });
    const res = await t.request({
      method: 'POST',
      url: '/v1/webhooks',
      key: adminKey.key,
      body: { url: rx.url('/keys'), events: ['key.created', 'key.rolled', 'key.revoked'] },
    });
    expect(res.statusCode, res.body).toBe(201);
    const hook = json(res).data as { secret: string };

    const created = (await wsvc('keys', 'create', '--user', a.userId, '--env', 'live', '--name', 'deploys')).key as {
      id: string;
    };
    const rolled = await wsvc('keys', 'roll', created.id, '--expire-old-in', '60');
    expect(rolled.previous_key.id).toBe(created.id);
    expect(rolled.key.name).toBe('deploys');
    const successor = rolled.key.id as string;
    await wsvc('keys', 'revoke', successor);

    const worker = testWorker(t, { listen: false });
    while ((await worker.runOnce()) > 0) {}
    await worker.stop(1000);

    const events = rx.to('/keys').map(
      (r) =>
        new Webhook(hook.secret).verify(r.body, r.headers as Record<string, string>) as {
          id: string;
          event: string;
          data: { key: { id: string; name: string }; successor_id?: string };
        },
    );
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(events.map((e) => [e.event, e.data.key.id])).toEqual([
      ['key.created', created.id],
      ['key.rolled', created.id],
      ['key.revoked', successor],
    ]);
    expect(events[1]?.data.successor_id).toBe(successor);
  });
});
