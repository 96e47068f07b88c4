// Backends: both — the CLI reads the workspaces from the suite's database
// Tier: full — spawns a dozen wsvc processes
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli, startTestApp, type TestApp } from '../helpers/app.js';
import { databaseUrlOf } from '../helpers/processes.js';
import { openTestStorage } from '../helpers/storage.js';

// docs/api.md#the-wsvc-cli: the commands that only read a workspace (keys list, users list, billing
// show, billing invoices) use the only workspace when there is exactly one, and say which on stderr;
// with none or several they say what to pass (exit code 2, a usage error).
const exec = promisify(execFile);
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let t: TestApp;
beforeAll(async () => {
  storage = await openTestStorage();
  t = await startTestApp({ storage });
});
afterAll(async () => {
  await t?.close();
  await storage?.close();
});

async function wsvc(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return exec(process.execPath, ['bin/wsvc.js', ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrlOf(storage), LOG_LEVEL: 'silent' },
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
}

const READS = [
  ['keys', 'list'],
  ['users', 'list'],
  ['billing', 'show'],
  ['billing', 'invoices'],
];

describe('read-only commands without --workspace', { timeout: 180_000 }, () => {
  it('none, one, then two workspaces', async () => {
    for (const cmd of READS) {
      const none = await wsvc(...cmd);
      expect(none.code, cmd.join(' ')).toBe(2);
      expect(none.stderr).toBe(
        'error: --workspace: there is no workspace yet; create one with: wsvc workspaces create --name <name> --admin-email <email>\n',
      );
    }

    const acme = await t.services.workspaces.create(asCli(t.services), { name: 'Acme', adminEmail: 'ada@acme.test' });
    const note = `no --workspace given: using ${acme.workspace.id} (Acme), the only workspace\n`;
    const keys = await wsvc('keys', 'list');
    expect(keys.code, keys.stderr).toBe(0);
    expect(keys.stderr).toBe(note);
    expect(keys.stdout).toContain(acme.keys.live.id);
    const show = await wsvc('billing', 'show', '--json');
    expect(show.code, show.stderr).toBe(0);
    expect(show.stderr).toBe(note);
    expect(JSON.parse(show.stdout).subscription.workspace_id).toBe(acme.workspace.id);
    const users = await wsvc('users', 'list', '--json');
    expect(JSON.parse(users.stdout).users.map((u: { email: string }) => u.email)).toEqual(['ada@acme.test']);
    expect((await wsvc('billing', 'invoices')).stdout).toBe('(no invoices)\n');

    await t.services.workspaces.create(asCli(t.services), { name: 'Globex', adminEmail: 'hank@globex.test' });
    for (const cmd of READS) {
      const two = await wsvc(...cmd);
      expect(two.code, cmd.join(' ')).toBe(2);
      expect(two.stderr).toBe(
        'error: --workspace <ws_id> is required: there are 2 workspaces (wsvc workspaces list shows them)\n',
      );
      expect(two.stdout).toBe('');
    }
    const given = await wsvc('keys', 'list', '--workspace', acme.workspace.id);
    expect(given.code).toBe(0);
    expect(given.stderr).toBe('');
  });
});
