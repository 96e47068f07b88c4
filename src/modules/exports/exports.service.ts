import { existsSync, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Db } from '../../db/dialect.js';
import type { ExportsTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { AppError, ConflictError, NotFoundError } from '../../kernel/errors.js';
import { isId, newId } from '../../kernel/ids.js';
import { type Actor, type Principal, requireAdmin, type SystemActor } from '../../kernel/principal.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import type { Unit } from '../../platform/unit-of-work.js';
import {
  clearLeftovers,
  type ExportSource,
  type ManifestFile,
  NdjsonFile,
  packArchive,
  workFolder,
} from './export-archive.js';
import { exportsRepository as repo } from './exports.repository.js';
import type { Export } from './exports.schemas.js';

/** A ready archive can be downloaded for 24 h (docs/data-lifecycle.md#export). */
export const EXPORT_TTL_MS = 24 * 60 * 60_000;
/** A run renews its lease with every batch; one that stops renewing it (killed) is started again after this. */
export const EXPORT_LEASE_MS = 2 * 60_000;
const BATCH_ROWS = 1_000;

/** The audit log's part of an export: its chain's ends, and its entries as stored (each with its hash). */
export interface AuditChainSource {
  exportEnds(workspaceId: string): Promise<ChainEndsLike | undefined>;
  chainRows(workspaceId: string, ends: ChainEndsLike): AsyncIterable<{ seq: number; hash: string } & object>;
}
interface ChainEndsLike {
  anchor: { seq: number; hash: string };
  head: { seq: number; hash: string };
}

/** Where an export run is, told to whoever watches it (the CLI's progress line). */
export interface ExportProgress {
  kind: string;
  kindsDone: number;
  kindsTotal: number;
  rows: number;
}

class LeaseLost extends Error {}

/** The export's JSON shape (docs/api.md#exports). */
export function toExport(r: ExportsTable): Export {
  const n = (v: number | string | null) => (v === null ? null : Number(v));
  return {
    id: r.id,
    status: r.status,
    progress: { kinds_done: r.kinds_done, kinds_total: r.kinds_total, rows_written: Number(r.rows_written) },
    size_bytes: n(r.size_bytes),
    sha256: r.sha256,
    error: r.error,
    created_at: r.created_at,
    finished_at: r.finished_at,
    expires_at: r.expires_at,
  };
}

/**
 * Workspace exports (docs/data-lifecycle.md#export): an admin asks (queued, audited `export.created`), a worker run
 * writes the archive under a lease (each kind of data in batches into NDJSON files, then tar + gzip into a `.part`
 * file renamed when complete), marks it ready for 24 h and emits `export.ready`; the download serves only a ready
 * archive of the caller's workspace.
 */
export function createExportsService(deps: {
  db: Db;
  clock: Clock;
  /** EXPORTS_DIR: where archives are written; shared by every process of the deployment. */
  dir: string;
  sources: readonly ExportSource[];
  audit: AuditChainSource;
  /** Names this process's runs in their lease. */
  workerId: string;
  batchRows?: number;
}) {
  const { db, clock, dir } = deps;
  const batchRows = deps.batchRows ?? BATCH_ROWS;
  const kindsTotal = deps.sources.length + 1;
  const fileOf = (id: string) => join(dir, `${id}.tar.gz`);
  let busy = false;

  /** Queues an export of `workspaceId` (an admin, or the CLI); audited `export.created`. Throws ForbiddenError. */
  async function request(u: Unit, workspaceId: string): Promise<Export> {
    const actor: Actor = u.actor;
    if (actor.kind === 'api_key' || actor.kind === 'session') requireAdmin(actor);
    return u.run(
      async ({ trx, audit }) => {
        const now = clock.now();
        const row: ExportsTable = {
          id: newId('export', now),
          workspace_id: workspaceId,
          env: actor.kind === 'api_key' ? actor.env : null,
          requested_by: actor.kind === 'system' ? actor.name : (actor.userId ?? 'unknown'),
          status: 'queued',
          kinds_done: 0,
          kinds_total: kindsTotal,
          rows_written: 0,
          size_bytes: null,
          sha256: null,
          error: null,
          attempts: 0,
          leased_by: null,
          lease_until: null,
          created_at: isoAt(now),
          started_at: null,
          finished_at: null,
          expires_at: null,
        };
        await repo.insert(trx, row);
        audit.record({
          action: 'export.created',
          target: { type: 'export', id: row.id },
          env: null,
          workspaceId,
          changes: { status: { before: null, after: 'queued' } },
        });
        return toExport(row);
      },
      { adminOnly: true },
    );
  }

  /** An export of the caller's workspace (a key: one asked for in its environment, or by the console or CLI). */
  async function find(p: Principal, id: string): Promise<ExportsTable> {
    requireAdmin(p);
    const row = isId('export', id) ? await repo.find(db, p.workspaceId, id) : undefined;
    if (!row || (p.kind === 'api_key' && row.env !== null && row.env !== p.env)) throw new NotFoundError('export');
    return row;
  }

  /** GET /v1/exports/{id}: status, progress, size. Throws NotFoundError, ForbiddenError. */
  async function get(p: Principal, id: string): Promise<Export> {
    return toExport(await find(p, id));
  }

  /**
   * GET /v1/exports: the workspace's exports, newest first, paged; a key sees those `get` shows it (its environment's,
   * and the console's and the CLI's). Throws ForbiddenError.
   */
  async function list(p: Principal, page: PageRequest): Promise<Page<Export>> {
    requireAdmin(p);
    const rows = await repo.list(db, p.workspaceId, p.kind === 'api_key' ? p.env : null, { ...page, order: 'desc' });
    return { ...rows, items: rows.items.map(toExport) };
  }

  /** The archive to send: 409 while it is not ready, 410 once its 24 h are over. Throws NotFoundError. */
  async function download(p: Principal, id: string): Promise<{ path: string; size: number; filename: string }> {
    return downloadable(await find(p, id));
  }

  /** The archive of a ready export of `workspaceId` (the CLI). */
  async function downloadFor(workspaceId: string, id: string) {
    return downloadable(await findFor(workspaceId, id));
  }

  /** An export of `workspaceId` (the CLI). Throws NotFoundError. */
  async function findFor(workspaceId: string, id: string): Promise<ExportsTable> {
    const row = await repo.find(db, workspaceId, id);
    if (!row) throw new NotFoundError('export');
    return row;
  }

  function downloadable(row: ExportsTable) {
    const expired = row.status === 'expired' || (row.expires_at !== null && row.expires_at <= isoAt(clock.now()));
    if (expired) {
      throw new AppError(410, 'export_expired', 'This export expired 24 hours after it was ready; request a new one.');
    }
    if (row.status !== 'ready') {
      throw new ConflictError('export_not_ready', `This export is ${row.status}, not ready to download yet.`);
    }
    return {
      path: fileOf(row.id),
      size: Number(row.size_bytes),
      filename: `workspace-${row.workspace_id}-${row.id}.tar.gz`,
    };
  }

  /**
   * Writes every due export (queued, or whose run's lease lapsed), one after the other; `only`: that one. Returns
   * how many it finished (ready or failed).
   */
  async function runDue(
    u: Unit<SystemActor>,
    opts: { only?: string; onProgress?: (p: ExportProgress) => void } = {},
  ): Promise<number> {
    // The job's ticks do not overlap in one process: one export at a time, so memory holds one batch.
    if (opts.only === undefined && busy) return 0;
    busy = opts.only === undefined;
    try {
      return await runEach(u, opts);
    } finally {
      if (opts.only === undefined) busy = false;
    }
  }

  async function runEach(
    u: Unit<SystemActor>,
    opts: { only?: string; onProgress?: (p: ExportProgress) => void },
  ): Promise<number> {
    mkdirSync(dir, { recursive: true });
    let done = 0;
    for (;;) {
      const now = clock.now();
      const row = await repo.due(db, isoAt(now), opts.only);
      if (!row) return done;
      const claimed = await u.run(({ trx }) =>
        repo.claim(trx, row, deps.workerId, isoAt(now), isoAt(now + EXPORT_LEASE_MS)),
      );
      if (!claimed) continue;
      try {
        await write(u, row, opts.onProgress);
        done++;
      } catch (err) {
        if (err instanceof LeaseLost) continue;
        await clearLeftovers(dir, row.id);
        const message = err instanceof Error ? err.message : String(err);
        await u.run(({ trx }) =>
          repo.finish(trx, row.id, deps.workerId, {
            status: 'failed',
            finished_at: isoAt(clock.now()),
            error: message.slice(0, 500),
          }),
        );
        done++;
      }
      if (opts.only !== undefined) return done;
    }
  }

  /** One run of one export, from scratch: what a run before it left is removed first. */
  async function write(u: Unit<SystemActor>, row: ExportsTable, onProgress?: (p: ExportProgress) => void) {
    await clearLeftovers(dir, row.id);
    const folder = await workFolder(dir, row.id);
    try {
      const files: ManifestFile[] = [];
      let rows = 0;
      const tick = async (kind: string) => {
        const kindsDone = files.length;
        onProgress?.({ kind, kindsDone, kindsTotal, rows });
        const ok = await u.run(({ trx }) =>
          repo.progress(trx, row.id, deps.workerId, {
            kinds_done: kindsDone,
            rows_written: rows,
            lease_until: isoAt(clock.now() + EXPORT_LEASE_MS),
          }),
        );
        if (!ok) throw new LeaseLost('another run holds this export now');
      };
      for (const source of deps.sources) {
        const file = new NdjsonFile(join(folder, `${source.kind}.ndjson`), `${source.kind}.ndjson`, source.kind);
        let after: string | null = null;
        for (;;) {
          const batch = await source.batch(row.workspace_id, after, batchRows);
          for (const r of batch.rows) await file.write(r);
          rows += batch.rows.length;
          await tick(source.kind);
          if (batch.rows.length < batchRows || batch.next === null) break;
          after = batch.next;
        }
        files.push(await file.close());
      }
      const ends = await deps.audit.exportEnds(row.workspace_id);
      const auditFile = new NdjsonFile(join(folder, 'audit_log.ndjson'), 'audit_log.ndjson', 'audit_log');
      if (ends) {
        let prev = ends.anchor.hash;
        for await (const entry of deps.audit.chainRows(row.workspace_id, ends)) {
          await auditFile.write({ ...entry, seq: Number(entry.seq), prev_hash: prev });
          prev = entry.hash;
          rows++;
          if (auditFile.rows % batchRows === 0) await tick('audit_log');
        }
      }
      files.push(await auditFile.close());
      await tick('audit_log');
      const manifest = {
        format: 'wsvc-export/1',
        export_id: row.id,
        workspace_id: row.workspace_id,
        created_at: isoAt(clock.now()),
        files,
        audit_chain: ends ?? null,
      };
      const packed = await packArchive(
        folder,
        files.map((f) => f.name),
        fileOf(row.id),
        manifest,
      );
      await u.run(async (c) => {
        const now = clock.now();
        const expiresAt = isoAt(now + EXPORT_TTL_MS);
        const ok = await repo.finish(c.trx, row.id, deps.workerId, {
          status: 'ready',
          finished_at: isoAt(now),
          expires_at: expiresAt,
          size_bytes: packed.size,
          sha256: packed.sha256,
          kinds_done: kindsTotal,
          rows_written: rows,
        });
        if (!ok) throw new LeaseLost('another run holds this export now');
        await c.emit({
          type: 'export.ready',
          workspaceId: row.workspace_id,
          exportId: row.id,
          expiresAt,
          at: isoAt(now),
        });
      });
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }

  /** Ready exports whose 24 h are over become `expired` and their archives are deleted; returns how many. */
  async function expireDue(u: Unit<SystemActor>): Promise<number> {
    const ids = await u.run(({ trx }) => repo.expire(trx, isoAt(clock.now())));
    for (const id of ids) await rm(fileOf(id), { force: true });
    return ids.length;
  }

  /** Removes a workspace's archives (finished or partial) from the folder: its deletion (docs/data-lifecycle.md). */
  async function removeArchives(workspaceId: string): Promise<void> {
    if (!existsSync(dir)) return; // no export ever written here
    for (const id of await repo.idsOf(db, workspaceId)) {
      await rm(fileOf(id), { force: true });
      await clearLeftovers(dir, id);
    }
  }

  return {
    request,
    get,
    removeArchives,
    getFor: async (workspaceId: string, id: string) => toExport(await findFor(workspaceId, id)),
    list,
    download,
    downloadFor,
    runDue,
    expireDue,
    dir,
  };
}
export type ExportsService = ReturnType<typeof createExportsService>;
