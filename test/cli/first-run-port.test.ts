import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/browser.js';
import { startWsvc, stopProcess } from '../helpers/processes.js';

// Backends: sqlite — the URL file beside a SQLite database (PostgreSQL deployments set PUBLIC_URL)
// Tier: full — a server and CLI child processes
// First run on a second port (docs/console.md, the first sign-in): `PORT=18080 npm start` in one shell,
// `npx wsvc workspaces create` without PORT in another. The server records the URL it answers on
// beside its SQLite database, so the set-password link the CLI prints points at it; the link's page
// names the account. SQLite only: the record is a file beside the database (PostgreSQL deployments
// set PUBLIC_URL for every process).
const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'wsvc-first-run-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The environment of a second shell: the database, and neither PORT nor PUBLIC_URL. */
function shellEnv(db: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: `sqlite:${db}`, LOG_LEVEL: 'silent', REDIS_URL: '' };
  delete env.PORT;
  delete env.PUBLIC_URL;
  return env;
}

async function createWorkspace(db: string, email: string, env = shellEnv(db)) {
  const r = await exec(
    process.execPath,
    ['bin/wsvc.js', 'workspaces', 'create', '--name', 'Acme', '--admin-email', email, '--json'],
    {
      env,
    },
  );
  return JSON.parse(r.stdout) as { set_password_url: string };
}

describe.runIf(process.env.WSVC_TEST_PROJECT !== 'postgres')('first run on another port', { timeout: 120_000 }, () => {
  it("the CLI's set-password link uses the running server's port; the page's API names the account", async () => {
    const db = join(dir, 'w.db');
    const port = await freePort();
    const env = shellEnv(db);
    const server = await startWsvc(['serve', '--api-only'], { ...env, PORT: String(port), LOG_LEVEL: 'info' });
    try {
      expect(existsSync(`${db}.server-url.${server.child.pid}`)).toBe(true);
      const out = await createWorkspace(db, 'first@acme.test');
      const base = `http://127.0.0.1:${port}`;
      expect(out.set_password_url).toMatch(new RegExp(`^${base}/console/set-password\\?token=`));
      const page = await fetch(out.set_password_url);
      expect(page.status).toBe(200);
      const token = new URL(out.set_password_url).searchParams.get('token');
      const link = await fetch(`${base}/console/api/password/link`, {
        method: 'POST',
        headers: { origin: base, 'content-type': 'application/json' },
        body: JSON.stringify({ token }),
      });
      expect(link.status).toBe(200);
      expect(((await link.json()) as { data: { email: string } }).data.email).toBe('first@acme.test');
      const unknown = await fetch(`${base}/console/api/password/link`, {
        method: 'POST',
        headers: { origin: base, 'content-type': 'application/json' },
        body: JSON.stringify({ token: 'x'.repeat(43) }),
      });
      expect(unknown.status).toBe(400);
      expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('invalid_link');
      // PORT or PUBLIC_URL given to the command itself still wins.
      const own = await createWorkspace(db, 'second@acme.test', { ...env, PUBLIC_URL: 'https://console.example.com' });
      expect(own.set_password_url).toMatch(/^https:\/\/console\.example\.com\/console\/set-password\?token=/);
    } finally {
      await stopProcess(server.child);
    }
    // Stopped: the record is gone, and links fall back to the default port.
    expect(existsSync(`${db}.server-url.${server.child.pid}`)).toBe(false);
    const after = await createWorkspace(db, 'third@acme.test');
    expect(after.set_password_url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/console\/set-password/);
  });
});
