import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemActor } from '../../src/kernel/principal.js';
import { verifyExportArchive } from '../../src/modules/exports/export-verify.js';
import { json, newWorkspace, startTestApp, type TestApp } from '../helpers/app.js';
import { expectError } from '../helpers/expect.js';
import { databaseUrlOf } from '../helpers/processes.js';
import { type Receiver, startReceiver } from '../helpers/receiver.js';
import { openTestStorage } from '../helpers/storage.js';
import { testWorker } from '../helpers/worker.js';

// Backends: both — every kind is read in batches from storage, and the run's lease and status live in the exports table
// Tier: full — a `wsvc` child process killed with SIGKILL mid-export, and the system's tar on the archive
// Workspace export (docs/data-lifecycle.md#export): request → the worker's run → download; the archive opens with tar,
// its manifest matches its files, it holds no secret, its audit log verifies offline; expiry after 24 h.

const exec = promisify(execFile);
let storage: Awaited<ReturnType<typeof openTestStorage>>;
let t: TestApp;
let rx: Receiver;
let now = Date.now();
const dir = mkdtempSync(join(tmpdir(), 'wsvc-exports-'));

beforeAll(async () => {
  storage = await openTestStorage();
  t = await startTestApp({
    storage,
    clock: { now: () => now },
    config: { WEBHOOK_ALLOW_INSECURE_URLS: true, WEBHOOK_MAX_RETRIES: 0, EXPORTS_DIR: dir },
  });
  rx = await startReceiver();
});
afterAll(async () => {
  await rx?.close();
  await t?.close();
  await storage?.close();
});

const job = () => t.services.uow.as(systemActor('scheduler:exports'));

async function drain() {
  const worker = testWorker(t, { listen: false, clock: { now: () => now } });
  while ((await worker.runOnce()) > 0) {}
  await worker.stop(1000);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('workspace export', { timeout: 180_000 }, () => {
  it('archives every kind, opens with tar, matches its manifest, holds no secret, verifies, expires after 24 h', async () => {
    const ws = await newWorkspace(t, 'Export');
    const viewer = await ws.member('viewer');
    const member = await ws.member('member');
    const api = (key: string, method: 'GET' | 'POST', url: string, body?: unknown) =>
      t.request({ method, url, key, body });
    const hook = await api(ws.live, 'POST', '/v1/webhooks', { url: rx.url('/all'), events: ['*'] });
    expect(hook.statusCode, hook.body).toBe(201);
    const secret = json(hook).data.secret as string;
    for (const key of [ws.live, ws.test]) {
      const r = await api(key, 'POST', '/v1/resources', { name: 'Kept', type: 'standard', metadata: { a: 'b' } });
      expect(r.statusCode, r.body).toBe(201);
    }
    t.services.usage.meter.record({
      workspaceId: ws.id,
      env: 'live',
      keyId: 'key_x',
      route: 'GET /v1/users/me',
      status: 200,
      latencyMs: 3,
    });
    await t.services.usage.meter.flush();
    await drain();

    // Only admins: a viewer's and a member's keys are refused, and nothing is queued.
    for (const key of [viewer.live, member.live]) {
      expectError(await api(key, 'POST', '/v1/exports'), 403, 'insufficient_scope');
    }
    const created = await api(ws.live, 'POST', '/v1/exports');
    expect(created.statusCode, created.body).toBe(202);
    const id = json(created).data.id as string;
    expect(json(created).data.status).toBe('queued');
    expectError(await api(ws.live, 'GET', `/v1/exports/${id}/download`), 409, 'export_not_ready');
    const audit = await api(ws.live, 'GET', '/v1/audit-log?action=export.created');
    expect(json(audit).data.map((e: { target: { id: string } }) => e.target.id)).toEqual([id]);

    expect(await t.services.exports.runDue(job())).toBe(1);
    const ready = json(await api(ws.live, 'GET', `/v1/exports/${id}`)).data;
    expect(ready).toMatchObject({ status: 'ready', progress: { kinds_done: 9, kinds_total: 9 } });
    expect(ready.expires_at).toBe(new Date(Date.parse(ready.finished_at) + 86_400_000).toISOString());

    const res = await api(ws.live, 'GET', `/v1/exports/${id}/download`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/gzip');
    const bytes = res.rawPayload;
    expect(bytes.length).toBe(ready.size_bytes);
    expect(sha(bytes)).toBe(ready.sha256);
    const out = mkdtempSync(join(tmpdir(), 'wsvc-export-out-'));
    const file = join(out, 'export.tar.gz');
    writeFileSync(file, bytes);
    const listed = (await exec('tar', ['-tzf', file])).stdout.trim().split('\n').sort();
    const kinds = [
      'members',
      'keys',
      'resources',
      'webhooks',
      'events',
      'deliveries',
      'usage',
      'invoices',
      'audit_log',
    ];
    expect(listed).toEqual(['manifest.json', ...kinds.map((k) => `${k}.ndjson`)].sort());
    await exec('tar', ['-xzf', file, '-C', out]);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(manifest.workspace_id).toBe(ws.id);
    const rows: Record<string, Record<string, unknown>[]> = {};
    for (const f of manifest.files as { name: string; kind: string; rows: number; sha256: string }[]) {
      const content = readFileSync(join(out, f.name));
      expect(sha(content), f.name).toBe(f.sha256);
      const lines = content.toString('utf8').split('\n').filter(Boolean);
      expect(lines.length, f.name).toBe(f.rows);
      rows[f.kind] = lines.map((l) => JSON.parse(l));
    }
    expect(rows.members?.length).toBe(3);
    expect(rows.keys?.length).toBeGreaterThanOrEqual(6);
    expect(rows.resources?.map((r) => r.env).sort()).toEqual(['live', 'test']);
    expect(rows.webhooks?.length).toBe(1);
    expect(rows.events?.length).toBeGreaterThanOrEqual(1);
    expect(rows.deliveries?.length).toBeGreaterThanOrEqual(1);
    expect(rows.usage?.length).toBeGreaterThanOrEqual(1);
    expect(rows.audit_log?.length).toBeGreaterThan(0);
    expect(rows.audit_log?.[0]).toHaveProperty('prev_hash');

    // No secret: no key (nor its digest), no webhook secret, no sealed value.
    const text = kinds.map((k) => readFileSync(join(out, `${k}.ndjson`), 'utf8')).join('');
    const digests = await storage.db
      .selectFrom('api_keys')
      .select('digest')
      .where('workspace_id', '=', ws.id)
      .execute();
    for (const d of digests) expect(text).not.toContain(d.digest);
    for (const k of [ws.live, ws.test, viewer.live, member.live, secret]) expect(text).not.toContain(k);
    expect(text).not.toMatch(/v1:[A-Za-z0-9_-]+:/);
    expect(text).not.toContain('whsec_');

    // The audit log verifies offline, through `wsvc audit verify --file` too; an edited entry does not.
    expect(await verifyExportArchive(file)).toMatchObject({ ok: true, workspaceId: ws.id });
    const cli = await exec(process.execPath, ['bin/wsvc.js', 'audit', 'verify', '--file', file], {
      env: { ...process.env, DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent' },
    });
    expect(cli.stdout).toMatch(/entries verified in 1 workspace/);

    // export.ready reaches the live endpoint once.
    await drain();
    const readyEvents = rx
      .to('/all')
      .map(
        (r) =>
          new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as { event: string; data: unknown },
      )
      .filter((e) => e.event === 'export.ready');
    expect(readyEvents).toHaveLength(1);
    expect(readyEvents[0]?.data).toEqual({ export_id: id, expires_at: ready.expires_at });

    // 24 h later: 410, then the job marks it expired and deletes the archive.
    now += 86_400_000;
    expectError(await api(ws.live, 'GET', `/v1/exports/${id}/download`), 410, 'export_expired');
    expect(await t.services.exports.expireDue(job())).toBeGreaterThanOrEqual(1);
    expect(json(await api(ws.live, 'GET', `/v1/exports/${id}`)).data.status).toBe('expired');
    expect(existsSync(join(dir, `${id}.tar.gz`))).toBe(false);

    // `wsvc workspaces export --out` runs an export to its end and writes the archive where it is told.
    const target = join(out, 'by-cli.tar.gz');
    const run = await exec(
      process.execPath,
      ['bin/wsvc.js', 'workspaces', 'export', '--workspace', ws.id, '--out', target],
      { env: { ...process.env, DATABASE_URL: databaseUrlOf(storage), EXPORTS_DIR: dir, LOG_LEVEL: 'silent' } },
    );
    expect(run.stdout).toMatch(new RegExp(`^export exp_\\w+ written to ${target} \\(\\d+ bytes\\)`));
    expect((await exec('tar', ['-tzf', target])).stdout).toContain('audit_log.ndjson');
    expect(await verifyExportArchive(target)).toMatchObject({ ok: true, workspaceId: ws.id });
  });

  it('a run killed with SIGKILL mid-way is started again by the next run; nothing partial is ever served', async () => {
    now = Date.now();
    const ws = await newWorkspace(t, 'Killed export');
    // Enough resources for the run to take a while (bulk SQL, not the API).
    const at = new Date(now).toISOString();
    for (let chunk = 0; chunk < 40; chunk++) {
      const values = Array.from({ length: 1000 }, (_, i) => ({
        id: `res_${String(chunk).padStart(4, '0')}${String(i).padStart(6, '0')}AAAAAAAAAAAAAAAA`,
        workspace_id: ws.id,
        env: 'live' as const,
        name: `Bulk ${chunk}-${i}`,
        type: 'standard' as const,
        status: 'active' as const,
        metadata: JSON.stringify({ n: i }),
        created_at: at,
        updated_at: at,
      }));
      await storage.db.insertInto('resources').values(values).execute();
    }
    const child = spawn(
      process.execPath,
      ['bin/wsvc.js', 'workspaces', 'export', '--workspace', ws.id, '--out', join(dir, 'never.tar.gz')],
      {
        env: { ...process.env, DATABASE_URL: databaseUrlOf(storage), EXPORTS_DIR: dir, LOG_LEVEL: 'silent' },
        stdio: 'ignore',
      },
    );
    const exited = new Promise((resolve) => child.on('exit', resolve));
    // Kill it once it has written some rows, before it is done.
    let row: { id: string; status: string; rows_written: number | string } | undefined;
    for (let i = 0; i < 1200; i++) {
      row = await storage.db
        .selectFrom('exports')
        .select(['id', 'status', 'rows_written'])
        .where('workspace_id', '=', ws.id)
        .executeTakeFirst();
      if (row && Number(row.rows_written) > 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGKILL');
    await exited;
    expect(row?.status).toBe('running');
    const id = row?.id as string;
    expect(existsSync(join(dir, `${id}.tar.gz`))).toBe(false);
    expect(existsSync(join(dir, 'never.tar.gz'))).toBe(false);
    const adminKey = ws.live;
    expectError(
      await t.request({ method: 'GET', url: `/v1/exports/${id}/download`, key: adminKey }),
      409,
      'export_not_ready',
    );

    // Another run takes it once the dead run's lease has lapsed, and starts it from scratch.
    expect(await t.services.exports.runDue(job())).toBe(0);
    now += 3 * 60_000;
    expect(await t.services.exports.runDue(job())).toBe(1);
    const done = json(await t.request({ method: 'GET', url: `/v1/exports/${id}`, key: adminKey })).data;
    expect(done.status).toBe('ready');
    const res = await t.request({ method: 'GET', url: `/v1/exports/${id}/download`, key: adminKey });
    expect(res.statusCode).toBe(200);
    const file = join(mkdtempSync(join(tmpdir(), 'wsvc-export-out-')), 'x.tar.gz');
    writeFileSync(file, res.rawPayload);
    const out = (await exec('tar', ['-xzOf', file, 'manifest.json'])).stdout;
    const resources = (JSON.parse(out).files as { kind: string; rows: number }[]).find((f) => f.kind === 'resources');
    expect(resources?.rows).toBe(40_000);
    expect(readdirSync(dir).filter((n) => n.startsWith(id) && n !== `${id}.tar.gz`)).toEqual([]);
  });

  // Last: it leaves exports queued, which the runs of the tests above would take.
  it("GET /v1/exports lists the workspace's exports newest first, paged, as GET /v1/exports/{id} scopes them", async () => {
    now = Date.now() + 10 * 60_000;
    const ws = await newWorkspace(t, 'Listed exports');
    const other = await newWorkspace(t, 'Other exports');
    const list = async (key: string, query = '') => {
      const res = await t.request({ method: 'GET', url: `/v1/exports${query}`, key });
      expect(res.statusCode, res.body).toBe(200);
      return json(res) as {
        data: { id: string; status: string }[];
        meta: { total: number; limit: number; offset: number; next_cursor: string | null };
      };
    };
    // Ids are time-sortable: each request a second after the one before, so newest first is a fixed order.
    const ask = async (key: string) => {
      now += 1000;
      const res = await t.request({ method: 'POST', url: '/v1/exports', key });
      expect(res.statusCode, res.body).toBe(202);
      return json(res).data as { id: string };
    };

    // Empty.
    expect(await list(ws.live)).toEqual({ data: [], meta: { total: 0, limit: 20, offset: 0, next_cursor: null } });

    // One: as GET /v1/exports/{id} shows it.
    const first = await ask(ws.live);
    const one = await list(ws.live);
    const byId = json(await t.request({ method: 'GET', url: `/v1/exports/${first.id}`, key: ws.live })).data;
    expect(one.data).toEqual([byId]);
    expect(one.meta).toEqual({ total: 1, limit: 20, offset: 0, next_cursor: null });

    // A key sees its environment's exports and the CLI's (env null), not the other environment's: as by id.
    const fromTest = await ask(ws.test);
    now += 1000;
    const fromCli = await t.services.exports.request(t.services.uow.as(systemActor('cli')), ws.id);
    const second = await ask(ws.live);
    const third = await ask(ws.live);
    expect((await list(ws.live)).data.map((e) => e.id)).toEqual([third.id, second.id, fromCli.id, first.id]);
    expect((await list(ws.test)).data.map((e) => e.id)).toEqual([fromCli.id, fromTest.id]);
    expectError(await t.request({ method: 'GET', url: `/v1/exports/${fromTest.id}`, key: ws.live }), 404, 'not_found');

    // Paged with the cursor, newest first, every export once; and with offset.
    const seen: string[] = [];
    let cursor: string | null = null;
    const offsets: number[] = [];
    do {
      const page = await list(ws.live, `?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.meta.total).toBe(4);
      offsets.push(page.meta.offset);
      seen.push(...page.data.map((e) => e.id));
      cursor = page.meta.next_cursor;
    } while (cursor);
    expect(seen).toEqual([third.id, second.id, fromCli.id, first.id]);
    expect(offsets).toEqual([0, 3]);
    expect((await list(ws.live, '?limit=2&offset=2')).data.map((e) => e.id)).toEqual([fromCli.id, first.id]);
    // Offset with a cursor is refused, and so is a cursor this list did not issue.
    const page1 = await list(ws.live, '?limit=1');
    expectError(
      await t.request({ method: 'GET', url: `/v1/exports?cursor=${page1.meta.next_cursor}&offset=1`, key: ws.live }),
      400,
      'validation_error',
    );
    expectError(
      await t.request({ method: 'GET', url: '/v1/exports?cursor=bm90LWEtY3Vyc29y', key: ws.live }),
      400,
      'validation_error',
    );

    // Another workspace sees none of them, and its own only.
    expect((await list(other.live)).data).toEqual([]);
    const theirs = await ask(other.live);
    expect((await list(other.live)).data.map((e) => e.id)).toEqual([theirs.id]);
    expect((await list(ws.live)).data.map((e) => e.id)).not.toContain(theirs.id);

    // Admins only, as the rest of /v1/exports.
    const member = await ws.member('member');
    expectError(await t.request({ method: 'GET', url: '/v1/exports', key: member.live }), 403, 'insufficient_scope');
  });
});
