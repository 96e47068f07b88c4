// Backends: both — secrets stored clear are sealed in the database's rows at start-up
// Tier: full — `wsvc serve` child processes, one killed with SIGKILL while it seals
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { secretsKeys } from '../../src/config.js';
import { writeJson } from '../../src/db/dialect.js';
import type { WebhooksTable } from '../../src/db/types.js';
import { newId } from '../../src/kernel/ids.js';
import { createSealer, isSealed, newSecretsKey } from '../../src/lib/sealed.js';
import { secretAt } from '../../src/modules/webhooks/secret-at.js';
import { asCli, startTestApp, type TestApp } from '../helpers/app.js';
import { freePort } from '../helpers/browser.js';
import { databaseUrlOf, startWsvc, stopProcess } from '../helpers/processes.js';

// docs/settings.md#secrets-at-rest: secrets an earlier version stored clear are sealed at the first start, before it
// listens, 200 rows per transaction. Killed with SIGKILL while sealing, nothing is lost (each row is its clear
// secret or a sealed value that opens to it), and the next start finishes. A start with another key refuses.

vi.setConfig({ testTimeout: 300_000 });

const ROWS = 5_000;
let t: TestApp;
let ws: string;
let key: Buffer;
const clearOf = new Map<string, string>();

beforeAll(async () => {
  t = await startTestApp();
  key = secretsKeys(t.config).keys[0] as Buffer;
  const out = await t.services.workspaces.create(asCli(t.services), {
    name: 'Upgrade',
    adminEmail: `upgrade-${Date.now()}@example.test`,
  });
  ws = out.workspace.id;
  // What an earlier version stored: the signing secrets as they are.
  const now = new Date().toISOString();
  for (let i = 0; i < ROWS; i += 500) {
    const rows: WebhooksTable[] = [];
    for (let j = i; j < Math.min(ROWS, i + 500); j++) {
      const id = newId('webhook');
      const clear = `whsec_${Buffer.from(`clear-secret-${j}`.padEnd(32, '.')).toString('base64')}`;
      clearOf.set(id, clear);
      rows.push({
        id,
        workspace_id: ws,
        env: 'live',
        url: `https://hooks.example.test/${j}`,
        events: writeJson(['*']),
        label: null,
        status: 'enabled',
        secret: clear,
        previous_secret: null,
        previous_secret_expires_at: null,
        disabled_reason: null,
        created_at: now,
        updated_at: now,
      });
    }
    await t.storage.db.insertInto('webhooks').values(rows).execute();
  }
});
afterAll(async () => {
  await t?.close();
});

const env = async (over: NodeJS.ProcessEnv = {}) => ({
  DATABASE_URL: databaseUrlOf(t.storage as unknown as { url: string; schema?: string }),
  SECRETS_KEY: key.toString('base64'),
  PORT: String(await freePort()),
  ...over,
});

async function stored(): Promise<{ sealed: number; clear: number; intact: number }> {
  const sealer = createSealer([key]);
  const rows = await t.storage.db
    .selectFrom('webhooks')
    .select(['id', 'secret'])
    .where('workspace_id', '=', ws)
    .execute();
  let sealed = 0;
  let intact = 0;
  for (const r of rows) {
    if (isSealed(r.secret)) sealed++;
    const clear = isSealed(r.secret) ? sealer.open(r.secret, secretAt(ws, r.id, 'secret')) : r.secret;
    if (clear === clearOf.get(r.id)) intact++;
  }
  return { sealed, clear: rows.length - sealed, intact };
}

describe('secrets stored clear, sealed at start-up', () => {
  it('a start killed with SIGKILL while sealing loses nothing; the next start finishes before it listens', async () => {
    expect(await stored()).toEqual({ sealed: 0, clear: ROWS, intact: ROWS });
    // The first batch logged (committed): SIGKILL at once.
    const child = spawn(process.execPath, ['bin/wsvc.js', 'serve', '--api-only'], {
      env: { ...process.env, ...(await env()), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.once('exit', (code, signal) => resolve(signal ?? code)),
    );
    child.stdout.on('data', (d) => {
      out += d;
      if (/"msg":"sealed stored secrets"/.test(out)) child.kill('SIGKILL');
    });
    expect(await exited, out).toBe('SIGKILL');
    // Killed before it listened: it never served with secrets half sealed.
    expect(out).not.toMatch(/"msg":"listening"/);
    const after = await stored();
    expect(after.intact).toBe(ROWS);
    expect(after.sealed).toBeGreaterThan(0);
    expect(after.sealed).toBeLessThan(ROWS);

    const server = await startWsvc(['serve', '--api-only'], await env());
    try {
      expect(await stored()).toEqual({ sealed: ROWS, clear: 0, intact: ROWS });
      expect(server.output()).toMatch(/"msg":"sealed stored secrets"/);
    } finally {
      await stopProcess(server.child);
    }
  });

  it('a start with another key refuses, naming SECRETS_KEY, and never serves', async () => {
    const run = await promisify(execFile)(process.execPath, ['bin/wsvc.js', 'serve', '--api-only'], {
      env: { ...process.env, ...(await env({ SECRETS_KEY: newSecretsKey(), LOG_LEVEL: 'silent' })) },
    }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/sealed with key [\w-]{12}, which SECRETS_KEY does not hold/);
    if (!t.config.DATABASE_URL.startsWith('sqlite:')) {
      const none = await promisify(execFile)(process.execPath, ['bin/wsvc.js', 'serve', '--api-only'], {
        env: { ...process.env, ...(await env({ SECRETS_KEY: '', LOG_LEVEL: 'silent' })) },
      }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/SECRETS_KEY is required with PostgreSQL/);
    }
  });
});
