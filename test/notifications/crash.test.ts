import type { ParsedMail } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createServices, type Services } from '../../src/services.js';
import { asCli } from '../helpers/app.js';
import { databaseUrlOf, startWsvc, stopProcess, type WsvcProcess } from '../helpers/processes.js';
import { eventually } from '../helpers/receiver.js';
import { type Smtp, startSmtp } from '../helpers/smtp.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — the outbox lease and the sent mark are rows
// Tier: full — kill -9 of a `wsvc worker` child process
// docs/notifications.md#the-crash-window: a real `wsvc worker` child process sends a notification to a
// real SMTP server on loopback, which SIGKILLs the worker the moment it accepts the message's DATA
// (before the worker can commit "sent"). Restarted, the worker sends it once more, after the lease
// (MAIL_LEASE_MS) and under the same Message-ID, and never a third time.

const LEASE_MS = 3000;
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let smtp: Smtp;
let services: Services;
let worker: WsvcProcess | undefined;
/** Set to a subject's start: the worker is killed as the server accepts the first message with it. */
let killOn: string | undefined;

beforeAll(async () => {
  storage = await openTestStorage();
  smtp = await startSmtp({
    onAccept: (m: ParsedMail) => {
      if (killOn && m.subject?.startsWith(killOn) && worker) {
        killOn = undefined;
        worker.child.kill('SIGKILL'); // before the 250 goes out: the worker cannot have recorded it
      }
    },
  });
  const config = loadConfig(
    {},
    {
      SECRETS_KEY: process.env.SECRETS_KEY || undefined,
      DATABASE_URL: storage.url,
      LOG_LEVEL: 'silent',
      PLAN_LIMITS: 'off',
    },
  );
  services = createServices({ storage, clock: systemClock, config });
});
afterAll(async () => {
  if (worker) await stopProcess(worker.child, 'SIGKILL');
  await smtp.close();
  await storage.close();
});

const env = () => ({
  DATABASE_URL: databaseUrlOf(storage),
  PORT: '0',
  REDIS_URL: '',
  SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
  MAIL_FROM: 'Workspace Service <notify@example.test>',
  PUBLIC_URL: 'https://console.example.test',
  MAIL_LEASE_MS: String(LEASE_MS),
});
const row = (id: string) =>
  storage.db.selectFrom('notifications').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const copiesOf = (messageId: string) => smtp.got.filter((m) => m.messageId === messageId).length;

describe('kill -9 of the worker between the SMTP acceptance and the commit', () => {
  it('the email is sent again once, after the lease, with the same Message-ID, and never a third time', async () => {
    const ws = await services.workspaces.create(asCli(services), {
      name: 'Crash mail',
      adminEmail: 'crash-mail@example.test',
    });
    const userId = ws.user.id;
    worker = await startWsvc(['worker'], env());
    const child = worker.child;
    const exited = new Promise<NodeJS.Signals | null>((r) => child.once('exit', (_c, s) => r(s)));
    killOn = 'API key created: Doomed mail';
    // A real cause: a key made for the admin tells them (key.created, docs/notifications.md).
    await services.keyRegistry.create(asCli(services), { userId, env: 'live', name: 'Doomed mail' });
    const [n] = await services.notifications.ofUser(ws.workspace.id, userId);
    if (!n) throw new Error('no notification written');
    expect(n.type).toBe('key.created');
    expect(await exited).toBe('SIGKILL');
    expect(smtp.got).toHaveLength(1);
    const first = smtp.got[0] as ParsedMail;
    const subject = first.subject ?? '';
    expect(subject).toMatch(/^API key created: Doomed mail \(live, /);
    const messageId = first.messageId ?? '';
    expect(messageId).toBe(`<${n.id}@console.example.test>`);
    // The server has it; the database still says pending and leased to the dead worker.
    const dead = await row(n.id);
    expect(dead).toMatchObject({ status: 'pending', attempt_count: 0, sent_at: null });
    expect(dead.leased_by).not.toBeNull();
    const leaseUntil = Date.parse(dead.lease_until ?? '');
    expect(leaseUntil).toBeGreaterThan(smtp.at[0] as number);
    expect(leaseUntil).toBeLessThanOrEqual((smtp.at[0] as number) + LEASE_MS);

    // Restarted at once, inside the lease: the email waits for the lease, then goes out once more.
    worker = await startWsvc(['worker'], env());
    await eventually(async () => copiesOf(messageId) === 2, 30_000);
    const second = smtp.got.filter((m) => m.messageId === messageId)[1] as ParsedMail;
    const secondAt = smtp.at[smtp.got.indexOf(second)] as number;
    expect(secondAt).toBeGreaterThanOrEqual(leaseUntil);
    expect(second.subject).toBe(subject);
    expect(second.text).toBe(first.text);
    const sent = await eventually(async () => {
      const r = await row(n.id);
      return r.status === 'sent' ? r : undefined;
    });
    expect(sent).toMatchObject({ attempt_count: 1, leased_by: null, lease_until: null });
    console.log(
      `crash window: first copy at +0 ms, lease until +${leaseUntil - (smtp.at[0] as number)} ms, ` +
        `second copy at +${secondAt - (smtp.at[0] as number)} ms (MAIL_LEASE_MS=${LEASE_MS}, job every 5 s)`,
    );

    // Later runs of the job send later notifications, never this one again.
    await services.keyRegistry.create(asCli(services), { userId, env: 'test', name: 'After the crash' });
    const later = (m: ParsedMail) => m.subject?.startsWith('API key created: After the crash') === true;
    await eventually(async () => smtp.got.some(later), 20_000);
    expect(copiesOf(messageId)).toBe(2);
    expect(smtp.got.map((m) => (later(m) ? 'later' : m.subject))).toEqual([subject, subject, 'later']);
    await stopProcess(worker.child, 'SIGTERM');
    worker = undefined;
  }, 60_000);
});
