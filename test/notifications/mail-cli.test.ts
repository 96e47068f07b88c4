import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { createNotificationsService } from '../../src/modules/notifications/notifications.service.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — `wsvc mail` in a child process reads the suite's database
// Tier: full — `wsvc` child processes, over a second of CPU each to start
// `wsvc mail list|show` (docs/api.md#notifications): the local mailbox, read by the real command in
// a child process on the suite's database, after endpoint health kept a "failing" email there.
const exec = promisify(execFile);
let t: TestApp;
let rx: Receiver;
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let databaseUrl: string;
beforeAll(async () => {
  storage = await openTestStorage();
  t = await startTestApp({
    storage,
    config: { WEBHOOK_ALLOW_INSECURE_URLS: true, WEBHOOK_MAX_RETRIES: 0, WEBHOOK_TIMEOUT_MS: 2000 },
  });
  rx = await startReceiver(() => ({ status: 503 }));
  const schema = storage.schema;
  databaseUrl = schema ? `${storage.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}` : storage.url;
});
afterAll(async () => {
  await rx.close();
  await t.close();
  await storage.close();
});

async function wsvc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec(process.execPath, ['bin/wsvc.js', ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
}

describe('wsvc mail list / show', { timeout: 180_000 }, () => {
  it('lists the kept emails and prints one; an unknown id is exit code 1', async () => {
    const ws = await newWorkspace(t);
    const body = { url: rx.url('/down'), events: ['*'] };
    const created = await t.request({ method: 'POST', url: '/v1/webhooks', key: ws.live, body });
    expect(created.statusCode).toBe(201);
    const res = await t.request({
      method: 'POST',
      url: '/v1/resources',
      key: ws.live,
      body: { name: 'R', type: 'standard' },
    });
    expect(res.statusCode).toBe(201);
    await testWorker(t, { listen: false }).runOnce();
    const mailbox = createNotificationsService({
      db: t.storage.db,
      clock: { now: () => Date.now() },
      admins: t.services.users.admins,
      userRow: t.services.users.row,
      publicUrl: () => 'http://127.0.0.1:8080',
      mailFrom: 'Workspace Service <no-reply@localhost>',
      disableAfterH: 120,
    });
    expect(
      await mailbox.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications'))),
    ).toBeGreaterThanOrEqual(1);

    const list = await wsvc('mail', 'list', '--json');
    expect(list.code, list.stderr).toBe(0);
    const mails = JSON.parse(list.stdout).mail as { id: string; subject: string; to_address: string }[];
    const mine = mails.find((m) => m.subject.includes(rx.url('/down')));
    if (!mine) throw new Error(`no kept email: ${list.stdout}`);
    const text = await wsvc('mail', 'list');
    expect(text.stdout.split('\n')[0]).toMatch(/^ID\s+TO\s+SUBJECT\s+CREATED$/);

    const shown = await wsvc('mail', 'show', mine.id);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`Subject: Webhook endpoint failing: ${rx.url('/down')}`);
    expect(shown.stdout).toMatch(/^Message-ID: <ntf_/);
    expect(shown.stdout).toContain(`/console/w/${ws.id}/live/webhooks/${json(created).data.id}`);

    const missing = await wsvc('mail', 'show', 'mail_nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('No such mail');
  });
});
