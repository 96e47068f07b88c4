import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/browser.js';
import { startWsvc, stopProcess } from '../helpers/processes.js';

// Backends: sqlite — a fresh SQLite file is the fresh install this is about (the check is one query on either database)
// Tier: full — a server and a CLI child process
// A fresh install says what to do first: while no workspace exists, the server's first log line (after the one
// that says it made the secrets key file, on the very first start) names
// `wsvc workspaces create`; once one exists, the server starts without it (docs/console.md, the first sign-in).
const exec = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'wsvc-first-hint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.runIf(process.env.WSVC_TEST_PROJECT !== 'postgres')(
  'the first log line of a fresh install',
  { timeout: 120_000 },
  () => {
    it('names wsvc workspaces create until a workspace exists', async () => {
      const db = join(dir, 'fresh.db');
      const env = { DATABASE_URL: `sqlite:${db}`, REDIS_URL: '', PUBLIC_URL: '' };
      const first = await startWsvc(['serve', '--api-only'], { ...env, PORT: String(await freePort()) });
      await stopProcess(first.child);
      // The very first start on SQLite first says it made the secrets key file (docs/settings.md#secrets-at-rest).
      const [keyLine, firstLine] = first
        .output()
        .split('\n')
        .slice(0, 2)
        .map((l) => JSON.parse(l || '{}') as { msg?: string });
      expect(keyLine?.msg).toMatch(/^created the secrets key file /);
      expect(firstLine?.msg).toContain('npx wsvc workspaces create --name');

      await exec(
        process.execPath,
        ['bin/wsvc.js', 'workspaces', 'create', '--name', 'Acme', '--admin-email', 'a@acme.test'],
        {
          env: { ...process.env, ...env, LOG_LEVEL: 'silent' },
        },
      );
      const second = await startWsvc(['serve', '--api-only'], { ...env, PORT: String(await freePort()) });
      await stopProcess(second.child);
      expect(second.output()).not.toContain('wsvc workspaces create');
    });
  },
);
