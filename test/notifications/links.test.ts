import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { asCli, json, startTestApp, type TestApp } from '../helpers/app.js';
import { type ConsoleClient, linkToken, ORIGIN, signIn, signInWithLink } from '../helpers/console.js';
import { expectError } from '../helpers/expect.js';
import { mailTo, type Smtp, startSmtp } from '../helpers/smtp.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — emails written in the transaction that makes the link, also by the CLI on the same database
// Tier: full — console sign-ins over HTTP (each a password hash: scrypt, at the suite's lower cost of vitest.config.ts), after each emailed link is redeemed over SMTP
// Invites and password resets by email (docs/notifications.md): the console's invite, `wsvc users
// invite` (the real command in a child process on the same database) and "forgot password" write
// their email in the transaction that makes the link; the worker's job sends it over real SMTP to a
// server on loopback (smtp-server, read back with mailparser). Times on an injected clock.

// Console sign-ins and password changes hash with scrypt (at the suite's lower cost, vitest.config.ts; several per test here): on a loaded 2-core machine that outgrows the default 30 s.
vi.setConfig({ testTimeout: 120_000 });

const exec = promisify(execFile);
let nowMs = Date.parse('2026-10-24T22:30:00.000Z');
const clock = { now: () => nowMs };
let smtp: Smtp;
let t: TestApp;
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let databaseUrl: string;
let admin: ConsoleClient;
let ws: string;
let adminKey: string;
let adminId: string;
beforeAll(async () => {
  smtp = await startSmtp();
  storage = await openTestStorage();
  t = await startTestApp({
    storage,
    clock,
    config: {
      SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      MAIL_FROM: 'Workspace Service <notify@example.test>',
      PUBLIC_URL: ORIGIN,
    },
  });
  const schema = storage.schema;
  databaseUrl = schema ? `${storage.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}` : storage.url;
  const out = await t.services.workspaces.create(asCli(t.services), {
    name: 'Acme & Co',
    adminEmail: 'owner@example.test',
  });
  ws = out.workspace.id;
  adminKey = out.keys.live.key;
  adminId = out.user.id;
  admin = await signInWithLink(t, out.set_password_url);
});
afterAll(async () => {
  await t.close();
  await storage.close();
  await smtp.close();
});

const send = () => t.services.notifications.sendDue(t.services.uow.as(systemActor('scheduler:send-notifications')));
const linkIn = (text: string) => /(http\S+token=\S+)/.exec(text)?.[1] ?? '';
const count = async () =>
  Number(
    (
      await t.storage.db
        .selectFrom('notifications')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
const ofType = async (userId: string, type: string) =>
  (await t.services.notifications.ofUser(ws, userId)).filter((r) => r.type === type);

describe('invite and password-reset emails (docs/notifications.md)', () => {
  it("the console's invite: one email with the link from PUBLIC_URL, both parts, Message-ID from the notification", async () => {
    const res = await admin.call({
      method: 'POST',
      url: '/console/api/members',
      ws,
      body: { email: 'new.member@example.test', role: 'member', name: 'Ana' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const invited = json(res).data;
    const [row, ...more] = await ofType(invited.user_id, 'invite');
    expect(more).toHaveLength(0);
    expect(row).toMatchObject({ category: 'account', status: 'pending' });
    // Stored until sent, never in `data`.
    expect(row?.data).not.toContain('token');
    expect(row?.secret).toBe(invited.invite_url);

    expect(await send()).toBeGreaterThanOrEqual(1);
    const [mail, again] = mailTo(smtp, 'new.member@example.test');
    expect(again).toBeUndefined();
    if (!mail) throw new Error('no invite email');
    expect(mail.subject).toBe('You are invited to Acme & Co on Workspace Service');
    expect(mail.messageId).toBe(`<${row?.id}@127.0.0.1>`);
    expect(mail.text).toContain('Hello Ana,');
    expect(mail.text).toContain('You were added to the workspace Acme & Co as member.');
    // The invitee has no timezone yet: UTC, named. Valid 7 days.
    expect(mail.text).toContain('until 2026-10-31 22:30 UTC.');
    expect(linkIn(mail.text ?? '')).toBe(invited.invite_url);
    expect(invited.invite_url.startsWith(`${ORIGIN}/console/set-password?token=`)).toBe(true);
    expect(mail.html).toContain(`<a href="${invited.invite_url}">Set your password</a>`);
    expect(mail.html).toContain('Acme &amp; Co');
    expect(await t.services.notifications.find(row?.id ?? '')).toMatchObject({ status: 'sent', secret: null });
    // The emailed link works.
    const member = await signInWithLink(t, linkIn(mail.text ?? ''));
    expect(member.session.email).toBe('new.member@example.test');
    expect(await send()).toBe(0);
  });

  it('a refused invite (the email is already a member) writes no email', async () => {
    const before = await count();
    const res = await admin.call({
      method: 'POST',
      url: '/console/api/members',
      ws,
      body: { email: 'owner@example.test', role: 'viewer' },
    });
    expectError(res, 400, 'validation_error');
    expect(await count()).toBe(before);
    expect(await send()).toBe(0);
  });

  it('forgot password: an email in the profile timezone (zone named, UTC beside, DST inside the hour)', async () => {
    // Europe/London leaves summer time at 01:00 UTC on 25 Oct 2026: the link, made at 00:30 UTC,
    // expires an hour later, in winter time.
    const tz = await t.request({
      method: 'PATCH',
      url: '/v1/users/me',
      key: adminKey,
      body: { timezone: 'Europe/London', name: 'Olu' },
    });
    expect(tz.statusCode, tz.body).toBe(200);
    nowMs = Date.parse('2026-10-25T00:30:00.000Z');
    const res = await t.request({
      method: 'POST',
      url: '/console/api/password/forgot',
      body: { email: 'OWNER@example.test' },
      headers: { origin: ORIGIN },
    });
    expect(res.statusCode).toBe(202);
    const userId = adminId;
    const rows = await ofType(userId, 'password.reset');
    expect(rows).toHaveLength(1);
    expect(await send()).toBe(1);
    const mail = mailTo(smtp, 'owner@example.test').find((m) => m.subject === 'Reset your Workspace Service password');
    if (!mail) throw new Error('no reset email');
    expect(mail.text).toContain('Hello Olu,');
    expect(mail.text).toContain('until 25 Oct 2026, 01:30 GMT (Europe/London) · 2026-10-25 01:30 UTC.');
    expect(mail.html).toContain('Choose a new password</a>');
    expect(mail.messageId).toBe(`<${rows[0]?.id}@127.0.0.1>`);
    const url = linkIn(mail.text ?? '');
    expect(url.startsWith(`${ORIGIN}/console/set-password?token=`)).toBe(true);
    // 01:29 UTC is 01:29 GMT: after the change (00:29 UTC would have read 01:29 BST).
    nowMs = Date.parse('2026-10-25T01:29:00.000Z');
    await signInWithLink(t, url, 'a new passphrase by email');
    await signIn(t, 'owner@example.test', 'a new passphrase by email');
    // The reset is a password change: the owner is told (security, always on).
    expect(await ofType(userId, 'password.changed')).toHaveLength(1);
    expect(await send()).toBe(1);
    const changed = mailTo(smtp, 'owner@example.test').filter((m) => m.subject === 'Your password was changed');
    expect(changed).toHaveLength(1);
    expect(changed[0]?.text).toContain('was changed at 25 Oct 2026, 01:29 GMT (Europe/London) · 2026-10-25 01:29 UTC.');
    // Used: the same link again is refused.
    const reused = await t.request({
      method: 'POST',
      url: '/console/api/password/set',
      body: { token: linkToken(url), password: 'yet another passphrase' },
      headers: { origin: ORIGIN },
    });
    expectError(reused, 400, 'invalid_link');
    // An unknown email: the same 202 and nothing written.
    const unknown = await t.request({
      method: 'POST',
      url: '/console/api/password/forgot',
      body: { email: 'nobody@example.test' },
      headers: { origin: ORIGIN },
    });
    expect(unknown.statusCode).toBe(202);
    expect(await ofType(userId, 'password.reset')).toHaveLength(1);
  });

  it('`wsvc users invite` queues the email in its transaction; the worker sends it', { timeout: 120_000 }, async () => {
    const r = await exec(
      process.execPath,
      ['bin/wsvc.js', 'users', 'invite', '--workspace', ws, '--email', 'cli.invitee@example.test', '--role', 'viewer'],
      { env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', PUBLIC_URL: ORIGIN } },
    );
    // The child runs on the system clock: the test's clock catches up with it.
    nowMs = Date.now() + 1000;
    const printed = /invite (http\S+)/.exec(r.stdout)?.[1] ?? '';
    expect(r.stdout).toContain('The invite email is queued');
    // The invite, and "member added" to the admin (docs/notifications.md#security-notifications).
    expect(await send()).toBe(2);
    expect(mailTo(smtp, 'owner@example.test').at(-1)?.subject).toBe('Member added: cli.invitee@example.test (viewer)');
    const [mail] = mailTo(smtp, 'cli.invitee@example.test');
    expect(mail?.subject).toBe('You are invited to Acme & Co on Workspace Service');
    expect(mail?.text).toContain('as viewer.');
    expect(linkIn(mail?.text ?? '')).toBe(printed);
  });
});
