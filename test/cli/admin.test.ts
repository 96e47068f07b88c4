import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asCli, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { signInWithLink } from '../helpers/console.js';
import { openTestStorage } from '../helpers/storage.js';

// Backends: both — the `wsvc` listing and reset-link commands in child processes on the suite's database
// Tier: full — 10 `wsvc` child processes, over a second of CPU each to start
// `wsvc workspaces list`, `users list --workspace`, `keys list` (owner and scopes), `users reset-link`, run as a user
// would: the real command in a child process, on the suite's database.
const exec = promisify(execFile);
let t: TestApp;
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let databaseUrl: string;
beforeAll(async () => {
  storage = await openTestStorage();
  t = await startTestApp({ storage });
  const schema = storage.schema;
  databaseUrl = schema ? `${storage.url}?options=${encodeURIComponent(`-c search_path=${schema}`)}` : storage.url;
});
afterAll(async () => {
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

// Each command is a fresh Node process (tsx): seconds each on a loaded machine.
describe('wsvc workspaces list / users list / keys list / users reset-link', { timeout: 180_000 }, () => {
  it('lists workspaces with their member counts, members of one workspace, and keys with owner and scopes', async () => {
    const ws = await newWorkspace(t, 'CLI listing');
    const viewer = await ws.member('viewer', ['resources:read', 'keys:read']);

    const spaces = await wsvc('workspaces', 'list', '--json');
    expect(spaces.code, spaces.stderr).toBe(0);
    const mine = JSON.parse(spaces.stdout).workspaces.find((w: { id: string }) => w.id === ws.id);
    expect(mine).toMatchObject({ name: 'CLI listing', members: 2 });
    const spacesText = await wsvc('workspaces', 'list');
    expect(spacesText.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+MEMBERS\s+CREATED$/);
    expect(spacesText.stdout).toMatch(new RegExp(`${ws.id}\\s+CLI listing\\s+2\\s+\\d{4}-`));

    const users = await wsvc('users', 'list', '--workspace', ws.id, '--json');
    expect(users.code, users.stderr).toBe(0);
    const list = JSON.parse(users.stdout).users;
    expect(list.map((u: { id: string; role: string }) => [u.id, u.role])).toEqual([
      [ws.adminId, 'admin'],
      [viewer.userId, 'viewer'],
    ]);
    const usersText = await wsvc('users', 'list', '--workspace', ws.id);
    expect(usersText.stdout).toMatch(/^ID\s+EMAIL\s+ROLE\s+NAME\s+CREATED\n/);
    expect(usersText.stdout).toContain(viewer.userId);

    const keys = await wsvc('keys', 'list', '--workspace', ws.id);
    expect(keys.code, keys.stderr).toBe(0);
    const [header, ...rows] = keys.stdout.trim().split('\n');
    expect(header).toMatch(/^ID\s+ENV\s+PREFIX\s+NAME\s+OWNER\s+SCOPES\s+LAST USED\s+STATUS$/);
    expect(rows).toHaveLength(4);
    const viewerRow = rows.find((r) => r.startsWith(viewer.liveKeyId)) as string;
    expect(viewerRow).toMatch(
      /live\s+svc_live_\w{4}…\s+live key\s+u\d+@example\.test\s+resources:read,keys:read\s+never\s+active$/,
    );
    expect(keys.stdout).not.toContain(viewer.live);
    // Keys that are not narrowed show "all", not every scope: the rows fit a terminal.
    const adminRows = rows.filter((r) => /\sadmin\d+@example\.test\s/.test(r));
    expect(adminRows.map((r) => r.split(/\s{2,}/)[5])).toEqual(['all', 'all']);
    const widest = Math.max(...keys.stdout.split('\n').map((l) => l.length));
    expect(widest).toBeLessThanOrEqual(140); // every scope in one column: about 300
    // A key narrowed to more scopes than fit shows their count; --wide lists them (docs/using.md#api-keys).
    const many = ['users:read', 'resources:read', 'resources:write', 'events:read', 'keys:read', 'usage:read'];
    const narrowed = await t.services.keyRegistry.create(asCli(t.services), {
      userId: ws.adminId,
      env: 'live',
      name: 'ops',
      scopes: many,
    });
    const counted = (await wsvc('keys', 'list', '--workspace', ws.id)).stdout;
    expect(counted.split('\n').find((r) => r.startsWith(narrowed.id))).toMatch(
      /\sops\s+\S+\s+6 of 15\s+never\s+active$/,
    );
    const wide = (await wsvc('keys', 'list', '--workspace', ws.id, '--wide')).stdout;
    expect(wide.split('\n').find((r) => r.startsWith(narrowed.id))).toContain(` ${many.join(',')} `);
    const keysJson = JSON.parse((await wsvc('keys', 'list', '--workspace', ws.id, '--json')).stdout).keys;
    expect(keysJson.find((k: { id: string }) => k.id === viewer.liveKeyId)).toMatchObject({
      user_id: viewer.userId,
      scopes: ['resources:read', 'keys:read'],
    });
  });

  it('an unknown workspace is an error on stderr with exit code 1', async () => {
    for (const cmd of [
      ['users', 'list'],
      ['keys', 'list'],
    ]) {
      const out = await wsvc(...cmd, '--workspace', 'ws_01JD3K8Z6W6J9Q4X1V5N2M7P8R');
      expect(out.code).toBe(1);
      expect(out.stderr).toMatch(/No such workspace/);
      expect(out.stdout).toBe('');
    }
    // Without --workspace: the only workspace, or a usage error (test/cli/default-workspace.test.ts).
  });

  it("users reset-link prints a working single-use link, the operator's way to reset a password", async () => {
    const email = `reset${Date.now()}@example.test`;
    await t.services.workspaces.create(asCli(t.services), { name: 'CLI reset', adminEmail: email });
    const out = await wsvc('users', 'reset-link', '--email', email.toUpperCase());
    expect(out.code, out.stderr).toBe(0);
    const url = /^reset (\S+)$/m.exec(out.stdout)?.[1] ?? '';
    expect(url).toMatch(/\/console\/set-password\?token=[A-Za-z0-9_-]{43}$/);
    expect((await signInWithLink(t, url, 'reset by an operator')).session.email).toBe(email);
    const unknown = await wsvc('users', 'reset-link', '--email', 'nobody@example.test');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no current member has the email/);
  });
});
