// Backends: both — an older row (a key name stored before names refused control characters) is read from storage into the email
// Tier: full — runs the wsvc CLI and a real SMTP server for each email
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { asCli, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { databaseUrlOf } from '../helpers/processes.js';
import { type Smtp, startSmtp } from '../helpers/smtp.js';
import { openTestStorage } from '../helpers/storage.js';

// docs/api.md#names: nothing a user typed reaches an email header unescaped, whatever older rows
// hold. A key whose name was stored with CR/LF (before the rule) is revoked; its security email's
// Subject stays one line, in the local mailbox (read by the real `wsvc mail show`) and over SMTP.
const exec = promisify(execFile);
const EVIL = 'ci\r\nBcc: x@evil.test';
const SUBJECT = /^API key revoked: ci\\r\\nBcc: x@evil\.test \(live, svc_live_[A-Za-z0-9]+…\)$/;

let storage: Awaited<ReturnType<typeof openTestStorage>>;
let mailbox: TestApp;
let smtp: Smtp;
let viaSmtp: TestApp;
beforeAll(async () => {
  storage = await openTestStorage();
  mailbox = await startTestApp({ storage });
  smtp = await startSmtp();
  viaSmtp = await startTestApp({ config: { SMTP_URL: `smtp://127.0.0.1:${smtp.port}` } });
});
afterAll(async () => {
  await viaSmtp?.close();
  await smtp?.close();
  await mailbox?.close();
  await storage?.close();
});

/** A workspace whose admin owns a second live key named EVIL as an older row holds it, revoked over HTTP. */
async function revokeEvilKey(t: TestApp): Promise<string> {
  const ws = await newWorkspace(t);
  const key = await t.services.keyRegistry.create(asCli(t.services), {
    userId: ws.adminId,
    env: 'live',
    name: 'placeholder',
    quiet: true,
  });
  await t.storage.db.updateTable('api_keys').set({ name: EVIL }).where('id', '=', key.id).execute();
  const res = await t.request({ method: 'DELETE', url: `/v1/keys/${key.id}`, key: ws.live });
  expect(res.statusCode, res.body).toBe(204);
  expect(await t.services.notifications.sendDue(t.services.uow.as(systemActor('worker')))).toBeGreaterThanOrEqual(1);
  return ws.adminId;
}

describe('names in email headers (docs/api.md#names)', () => {
  it('the local mailbox keeps a one-line Subject, and `wsvc mail show` prints no injected header', async () => {
    await revokeEvilKey(mailbox);
    const [mail] = await mailbox.services.notifications.listMail(1);
    expect(mail?.subject).toMatch(SUBJECT);
    const shown = await exec(process.execPath, ['bin/wsvc.js', 'mail', 'show', String(mail?.id)], {
      env: { ...process.env, DATABASE_URL: databaseUrlOf(storage), LOG_LEVEL: 'silent' },
    });
    const head = shown.stdout.split('\n\n')[0]?.split('\n') ?? [];
    expect(head.map((l) => l.split(':')[0])).toEqual(['Message-ID', 'To', 'Subject', 'Date']);
    expect(head[2]?.slice('Subject: '.length)).toMatch(SUBJECT);
  });

  it('over SMTP the Subject is the same one line, and the message goes to its recipient only', async () => {
    await revokeEvilKey(viaSmtp);
    const sent = smtp.got.filter((m) => m.subject?.startsWith('API key revoked'));
    expect(sent).toHaveLength(1);
    const [m] = sent;
    expect(m?.subject).toMatch(SUBJECT);
    expect(m?.headers.has('bcc')).toBe(false);
    expect(m?.headerLines.filter((l) => /^bcc$/i.test(l.key))).toEqual([]);
  });
});
