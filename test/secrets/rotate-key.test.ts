// Backends: both — stored secrets are sealed again, batch by batch, in the database's rows
// Tier: full — `wsvc secrets rotate-key` child processes, one killed with SIGKILL in the middle
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { secretsKeys } from '../../src/config.js';
import { writeJson } from '../../src/db/dialect.js';
import type { WebhooksTable } from '../../src/db/types.js';
import { newId } from '../../src/kernel/ids.js';
import { createSealer, kidOf, kidOfKey, newSecretsKey } from '../../src/lib/sealed.js';
import { secretAt } from '../../src/modules/webhooks/secret-at.js';
import { asCli, startTestApp, type TestApp } from '../helpers/app.js';
import { storedEntries } from '../helpers/audit-entries.js';
import { databaseUrlOf } from '../helpers/processes.js';

// docs/settings.md#rotating-the-key: `wsvc secrets rotate-key` seals every stored secret again under the first key,
// 200 rows per transaction; killed with SIGKILL midway it loses nothing (each row opens, under one key or the
// other, to the secret it was), and run again it finishes.

vi.setConfig({ testTimeout: 300_000 });

const ROWS = 5_000;
let t: TestApp;
let ws: string;
let oldKey: Buffer;
const newKey = Buffer.from(newSecretsKey(), 'base64');
const clearOf = new Map<string, string>();

beforeAll(async () => {
  t = await startTestApp();
  oldKey = secretsKeys(t.config).keys[0] as Buffer;
  const out = await t.services.workspaces.create(asCli(t.services), {
    name: 'Rotate',
    adminEmail: `rotate-${Date.now()}@example.test`,
  });
  ws = out.workspace.id;
  // Many webhooks sealed under the old key (as the service seals them), written in bulk.
  const old = createSealer([oldKey]);
  const now = new Date().toISOString();
  for (let i = 0; i < ROWS; i += 500) {
    const rows: WebhooksTable[] = [];
    for (let j = i; j < Math.min(ROWS, i + 500); j++) {
      const id = newId('webhook');
      const clear = `whsec_${Buffer.from(`rotate-secret-${j}`.padEnd(32, '.')).toString('base64')}`;
      clearOf.set(id, clear);
      rows.push({
        id,
        workspace_id: ws,
        env: 'live',
        url: `https://hooks.example.test/${j}`,
        events: writeJson(['*']),
        label: null,
        status: 'enabled',
        secret: old.seal(clear, secretAt(ws, id, 'secret')),
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

const env = () => ({
  ...process.env,
  DATABASE_URL: databaseUrlOf(t.storage as unknown as { url: string; schema?: string }),
  SECRETS_KEY: `${newKey.toString('base64')},${oldKey.toString('base64')}`,
  LOG_LEVEL: 'silent',
});

/** Every webhook secret of the workspace: under which key, and what it opens to with both keys. */
async function stored(): Promise<{ underNew: number; underOld: number; intact: number }> {
  const both = createSealer([newKey, oldKey]);
  const rows = await t.storage.db
    .selectFrom('webhooks')
    .select(['id', 'secret'])
    .where('workspace_id', '=', ws)
    .execute();
  let underNew = 0;
  let underOld = 0;
  let intact = 0;
  for (const r of rows) {
    const kid = kidOf(r.secret);
    if (kid === kidOfKey(newKey)) underNew++;
    if (kid === kidOfKey(oldKey)) underOld++;
    if (both.open(r.secret, secretAt(ws, r.id, 'secret')) === clearOf.get(r.id)) intact++;
  }
  return { underNew, underOld, intact };
}

describe('wsvc secrets rotate-key', () => {
  it('killed with SIGKILL midway loses nothing; run again, it finishes, says so and is audited', async () => {
    expect(await stored()).toEqual({ underNew: 0, underOld: ROWS, intact: ROWS });
    // The first progress line on stderr: a batch has committed; SIGKILL at once.
    const child = spawn(process.execPath, ['bin/wsvc.js', 'secrets', 'rotate-key'], {
      env: env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
      child.once('exit', (code, signal) => resolve(signal ?? code)),
    );
    child.stderr.on('data', (d) => {
      err += d;
      if (/sealed again/.test(err)) child.kill('SIGKILL');
    });
    expect(await exited, err).toBe('SIGKILL');
    const killed = await stored();
    expect(killed.intact).toBe(ROWS);
    expect(killed.underNew).toBeGreaterThan(0);
    expect(killed.underNew).toBeLessThan(ROWS);
    expect(killed.underNew + killed.underOld).toBe(ROWS);

    const again = await promisify(execFile)(process.execPath, ['bin/wsvc.js', 'secrets', 'rotate-key'], { env: env() });
    expect(again.stdout).toContain(`under key ${kidOfKey(newKey)}`);
    expect(again.stderr).toMatch(/webhooks\.secret: \d+ sealed again/);
    expect(await stored()).toEqual({ underNew: ROWS, underOld: 0, intact: ROWS });
    const entries = (await storedEntries(t, ws)).filter((e) => e.action === 'secrets.key_rotated');
    expect(entries.length).toBeGreaterThanOrEqual(1);
    expect(entries.at(-1)).toMatchObject({ actor_id: 'cli', target_id: kidOfKey(newKey) });
    // The old key is no longer needed: the new one alone opens every secret.
    const onlyNew = createSealer([newKey]);
    const one = await t.storage.db
      .selectFrom('webhooks')
      .select(['id', 'secret'])
      .where('workspace_id', '=', ws)
      .executeTakeFirstOrThrow();
    expect(onlyNew.open(one.secret, secretAt(ws, one.id, 'secret'))).toBe(clearOf.get(one.id));
    // …and a start with the old key alone refuses, naming SECRETS_KEY.
    const refused = await promisify(execFile)(process.execPath, ['bin/wsvc.js', 'secrets', 'rotate-key'], {
      env: { ...env(), SECRETS_KEY: oldKey.toString('base64') },
    }).then(
      () => '',
      (e: { stderr: string }) => e.stderr,
    );
    expect(refused).toMatch(/which SECRETS_KEY does not hold/);
  });
});
