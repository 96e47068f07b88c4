// Backends: both — the `wsvc` member and billing commands in child processes on the suite's database
// Tier: full — 16 `wsvc` child processes, over a second of CPU each to start
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { entriesOf, onlyEntry, type StoredEntry } from '../helpers/audit-entries.js';
import { databaseUrlOf, runWsvc } from '../helpers/processes.js';
import { openTestStorage } from '../helpers/storage.js';

// The CLI's changes to workspaces, members and billing, run as an operator would (the real command in a child process): one entry
// each, by the system actor `cli`, with no request id, address or user agent; a refused command leaves none.
let nowMs = Date.parse('2028-01-01T00:00:00.000Z');
let t: TestApp;
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let databaseUrl: string;
beforeAll(async () => {
  storage = await openTestStorage();
  t = await startTestApp({ storage, clock: { now: () => nowMs } });
  databaseUrl = databaseUrlOf(storage);
});
afterAll(async () => {
  await t.close();
  await storage.close();
});

const wsvc = (...args: string[]) => runWsvc(databaseUrl, args);

function expectCli(e: StoredEntry) {
  expect({
    type: e.actor_type,
    id: e.actor_id,
    name: e.actor_name,
    request_id: e.request_id,
    ip: e.ip,
    user_agent: e.user_agent,
  }).toEqual({ type: 'system', id: 'cli', name: 'cli', request_id: null, ip: null, user_agent: null });
}

describe('wsvc workspaces create, users invite|set-role|reset-link|remove and billing set-plan|mark-paid|void', {
  timeout: 180_000,
}, () => {
  it('a member invited, their role changed, a reset link made and the member removed by the CLI: one entry each, by `cli`', async () => {
    const ws = await newWorkspace(t, 'CLI audit');
    let out!: Awaited<ReturnType<typeof wsvc>>;
    const invited = await entriesOf(t, ws.id, async () => {
      out = await wsvc(
        'users',
        'invite',
        '--workspace',
        ws.id,
        '--email',
        'cli.member@example.test',
        '--role',
        'member',
        '--json',
      );
    });
    expect(out.code, out.stderr).toBe(0);
    const userId = JSON.parse(out.stdout).user.id as string;
    const inviteUrl = JSON.parse(out.stdout).invite_url as string;
    const i = onlyEntry(invited, 'member.invited');
    expectCli(i);
    expect({ type: i.target_type, id: i.target_id }).toEqual({ type: 'user', id: userId });
    expect(JSON.stringify(i)).not.toContain(new URL(inviteUrl).searchParams.get('token'));

    const role = await entriesOf(t, ws.id, async () => {
      out = await wsvc('users', 'set-role', userId, '--role', 'viewer');
    });
    expect(out.code, out.stderr).toBe(0);
    const r = onlyEntry(role, 'member.role_changed');
    expectCli(r);
    expect(r.changes).toEqual({ role: { before: 'member', after: 'viewer' } });

    // A reset link made by the operator: user.reset_link_created by `cli` on the member, never the link's token.
    const reset = await entriesOf(t, ws.id, async () => {
      out = await wsvc('users', 'reset-link', '--email', 'cli.member@example.test', '--json');
    });
    expect(out.code, out.stderr).toBe(0);
    const resetOut = JSON.parse(out.stdout) as { url: string; expires_at: string };
    const l = onlyEntry(reset, 'user.reset_link_created');
    expectCli(l);
    expect({ type: l.target_type, id: l.target_id, env: l.env }).toEqual({ type: 'user', id: userId, env: null });
    expect(l.changes).toEqual({ expires_at: { before: null, after: resetOut.expires_at } });
    expect(JSON.stringify(l)).not.toContain(new URL(resetOut.url).searchParams.get('token'));

    const removed = await entriesOf(t, ws.id, async () => {
      out = await wsvc('users', 'remove', userId);
    });
    expect(out.code, out.stderr).toBe(0);
    expectCli(onlyEntry(removed, 'member.removed'));

    // Refused: an unknown user, a removed one.
    expect(
      await entriesOf(t, null, async () => {
        expect((await wsvc('users', 'set-role', 'usr_01JUNKNOWN0000000000000000', '--role', 'viewer')).code).not.toBe(
          0,
        );
        expect((await wsvc('users', 'remove', userId)).code).not.toBe(0);
        expect((await wsvc('users', 'reset-link', '--email', 'cli.member@example.test')).code).not.toBe(0);
      }),
    ).toEqual([]);
  });

  it('a workspace created by the CLI: its first entry, workspace.created by `cli`, naming admin and keys by id only', async () => {
    let out!: Awaited<ReturnType<typeof wsvc>>;
    const created = await entriesOf(t, null, async () => {
      out = await wsvc(
        'workspaces',
        'create',
        '--name',
        'Made by CLI',
        '--admin-email',
        'cli.admin@example.test',
        '--json',
      );
    });
    expect(out.code, out.stderr).toBe(0);
    const made = JSON.parse(out.stdout);
    const w = onlyEntry(created, 'workspace.created');
    expectCli(w);
    expect({ ws: w.workspace_id, seq: w.seq, type: w.target_type, id: w.target_id, env: w.env }).toEqual({
      ws: made.workspace.id,
      seq: 1,
      type: 'workspace',
      id: made.workspace.id,
      env: null,
    });
    expect(w.changes).toEqual({
      name: { before: null, after: 'Made by CLI' },
      admin_user_id: { before: null, after: made.user.id },
      admin_email: { before: null, after: 'cli.admin@example.test' },
      live_key_id: { before: null, after: made.keys.live.id },
      test_key_id: { before: null, after: made.keys.test.id },
    });
    // The keys and the set-password link's token are shown once to the operator, never recorded.
    const text = JSON.stringify(w);
    for (const secret of [
      made.keys.live.key,
      made.keys.test.key,
      new URL(made.set_password_url).searchParams.get('token'),
    ])
      expect(text.includes(secret), 'a key or link token in the entry').toBe(false);
    // Refused (an email that is none): no workspace, no entry anywhere.
    expect(
      await entriesOf(t, null, async () => {
        expect((await wsvc('workspaces', 'create', '--name', 'Bad', '--admin-email', 'not-an-email')).code).not.toBe(0);
      }),
    ).toEqual([]);
  });

  it('a plan set by the CLI: one plan.changed by `cli` on the subscription; the same plan or an unknown one, none', async () => {
    const ws = await newWorkspace(t, 'CLI plan');
    let out!: Awaited<ReturnType<typeof wsvc>>;
    const up = await entriesOf(t, ws.id, async () => {
      out = await wsvc('billing', 'set-plan', '--workspace', ws.id, '--plan', 'pro', '--json');
    });
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout).result).toMatchObject({ change: 'upgraded', from: 'free', to: 'pro' });
    const u = onlyEntry(up, 'plan.changed');
    expectCli(u);
    expect({ type: u.target_type, id: u.target_id, env: u.env }).toEqual({
      type: 'subscription',
      id: ws.id,
      env: null,
    });
    expect(u.changes).toEqual({ plan: { before: 'free', after: 'pro' } });

    const down = await entriesOf(t, ws.id, async () => {
      out = await wsvc('billing', 'set-plan', '--workspace', ws.id, '--plan', 'free', '--json');
    });
    expect(out.code, out.stderr).toBe(0);
    const effectiveAt = JSON.parse(out.stdout).result.effective_at as string;
    const d = onlyEntry(down, 'plan.changed');
    expectCli(d);
    expect(d.changes).toEqual({
      pending_plan: { before: null, after: 'free' },
      pending_from: { before: null, after: effectiveAt },
    });

    // The plan it is already on (the pending downgrade cancelled is a change: one entry), then nothing changes.
    const cancel = await entriesOf(t, ws.id, async () => {
      out = await wsvc('billing', 'set-plan', '--workspace', ws.id, '--plan', 'pro');
    });
    expect(out.code, out.stderr).toBe(0);
    expect(onlyEntry(cancel, 'plan.changed').changes).toEqual({
      pending_plan: { before: 'free', after: null },
      pending_from: { before: effectiveAt, after: null },
    });
    expect(
      await entriesOf(t, null, async () => {
        expect((await wsvc('billing', 'set-plan', '--workspace', ws.id, '--plan', 'pro')).code).toBe(0);
        expect((await wsvc('billing', 'set-plan', '--workspace', ws.id, '--plan', 'gold')).code).not.toBe(0);
      }),
    ).toEqual([]);
  });

  it('an invoice marked paid, another voided: invoice.marked_paid and invoice.voided by `cli`; a second time none', async () => {
    const ws = await newWorkspace(t, 'CLI invoices');
    // Two finalized invoices: two periods end, the job runs an hour after.
    nowMs = Date.parse('2028-03-01T02:00:00.000Z');
    // (The first test's workspace, made at the same time, gets its two as well.)
    expect(
      await t.services.billing.finalizeDue(t.services.uow.as(systemActor('scheduler:billing-invoices'))),
    ).toBeGreaterThanOrEqual(2);
    const [second, first] = (await t.services.billing.invoicesOf(ws.id, { limit: 10, offset: 0, afterId: null })).items;
    let out!: Awaited<ReturnType<typeof wsvc>>;
    const paid = await entriesOf(t, ws.id, async () => {
      out = await wsvc('billing', 'mark-paid', first?.id ?? '');
    });
    expect(out.code, out.stderr).toBe(0);
    const p = onlyEntry(paid, 'invoice.marked_paid');
    expectCli(p);
    expect({ type: p.target_type, id: p.target_id }).toEqual({ type: 'invoice', id: first?.id });
    expect(p.changes).toEqual({ status: { before: 'open', after: 'paid' } });
    const voided = await entriesOf(t, ws.id, async () => {
      out = await wsvc('billing', 'void', second?.id ?? '');
    });
    expect(out.code, out.stderr).toBe(0);
    expect(onlyEntry(voided, 'invoice.voided').changes).toEqual({ status: { before: 'open', after: 'void' } });
    expect(
      await entriesOf(t, ws.id, async () => {
        expect((await wsvc('billing', 'void', first?.id ?? '')).code).not.toBe(0);
      }),
    ).toEqual([]);
  });
});
