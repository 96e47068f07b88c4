// Backends: sqlite — the first-run link records are files beside a SQLite database (PostgreSQL deployments set PUBLIC_URL)
// Tier: full — starts and kills three real server processes
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/browser.js';
import { startWsvc, stopProcess, type WsvcProcess } from '../helpers/processes.js';

// docs/operations.md#first-run-links: two `wsvc serve` on one SQLite data directory (two ports)
// each keep their own record of the URL they answer on; stopping one leaves the other's, so
// `wsvc users reset-link` in another shell still prints a link to a running server. A record left
// by a killed server is ignored.
const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'wsvc-two-servers-'));
const servers: WsvcProcess[] = [];
afterAll(async () => {
  for (const s of servers) await stopProcess(s.child, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** The environment of another shell: the database, and neither PORT nor PUBLIC_URL. */
function shellEnv(db: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: `sqlite:${db}`, LOG_LEVEL: 'silent', REDIS_URL: '' };
  delete env.PORT;
  delete env.PUBLIC_URL;
  return env;
}

describe.runIf(process.env.WSVC_TEST_PROJECT !== 'postgres')(
  'two servers on one SQLite database',
  { timeout: 180_000 },
  () => {
    it("stopping the second leaves the first one's link; a killed server's record is ignored", async () => {
      const db = join(dir, 'w.db');
      const env = shellEnv(db);
      const resetLink = async () => {
        const r = await exec(
          process.execPath,
          ['bin/wsvc.js', 'users', 'reset-link', '--email', 'ada@acme.test', '--json'],
          {
            env,
          },
        );
        return (JSON.parse(r.stdout) as { url: string }).url;
      };
      await exec(
        process.execPath,
        ['bin/wsvc.js', 'workspaces', 'create', '--name', 'Acme', '--admin-email', 'ada@acme.test'],
        {
          env,
        },
      );
      const [p1, p2, p3] = [await freePort(), await freePort(), await freePort()];
      const first = await startWsvc(['serve', '--api-only'], { ...env, PORT: String(p1), LOG_LEVEL: 'info' });
      servers.push(first);
      expect(await resetLink()).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${p1}/console/set-password\\?token=`));

      const second = await startWsvc(['serve', '--api-only'], { ...env, PORT: String(p2), LOG_LEVEL: 'info' });
      servers.push(second);
      // Both running: the one started last.
      expect(await resetLink()).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${p2}/`));
      await stopProcess(second.child);
      // The first still answers, and the link says so.
      const link = await resetLink();
      expect(link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${p1}/console/set-password\\?token=`));
      expect((await fetch(link)).status).toBe(200);

      // A server killed without its shutdown leaves its record behind: ignored (and removed).
      const killed = await startWsvc(['serve', '--api-only'], { ...env, PORT: String(p3), LOG_LEVEL: 'info' });
      await stopProcess(killed.child, 'SIGKILL');
      expect(existsSync(`${db}.server-url.${killed.child.pid}`)).toBe(true);
      expect(await resetLink()).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${p1}/`));
      expect(existsSync(`${db}.server-url.${killed.child.pid}`)).toBe(false);

      await stopProcess(first.child);
      expect(readdirSync(dir).filter((n) => n.includes('server-url'))).toEqual([]);
      expect(await resetLink()).toMatch(/^http:\/\/127\.0\.0\.1:8080\/console\/set-password/);
    });
  },
);
