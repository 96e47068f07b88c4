import type { Db } from '../../db/dialect.js';
import type { AuditEntriesTable, Env } from '../../db/types.js';
import { AUDIT_ACTIONS, type AuditAction } from '../../kernel/audit-actions.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { fieldError } from '../../kernel/errors.js';
import { type Principal, requireAdmin, type SystemActor } from '../../kernel/principal.js';
import { decodeCursor, encodeCursor } from '../../lib/paging.js';
import { PURGE_BATCH_ROWS } from '../../platform/batched-purge.js';
import type { Unit, UnitOfWork } from '../../platform/unit-of-work.js';
import { type AuditFilter, auditRepository as repo } from './audit.repository.js';
import type { AuditEntry, AuditQuery } from './audit.schemas.js';
import { type ChainEnds, walkChain } from './audit-chain.js';
import type { AuditSequencer } from './audit-sequencer.js';

const DAY_MS = 86_400_000;
const VERIFY_BATCH = 1_000;

/** One page of the log, newest first (or oldest first for an export), with the list's meta. */
export interface AuditPage {
  items: AuditEntry[];
  total: number;
  limit: number;
  offset: number;
  nextCursor: string | null;
}

/** What `verify` found in one workspace's chain: how many entries hold, or the first that does not. */
export type ChainCheck =
  | { workspaceId: string; ok: true; entries: number }
  | { workspaceId: string; ok: false; entries: number; id: string | null; seq: number; problem: string };

/** The audit log's JSON shape (docs/api.md#audit-log). */
export function toAuditEntry(r: AuditEntriesTable): AuditEntry {
  return {
    id: r.id,
    seq: Number(r.seq),
    time: r.time,
    actor: {
      type: r.actor_type,
      id: r.actor_id,
      name: r.actor_name,
      ...(r.actor_type === 'key' ? { user_id: r.actor_user_id } : {}),
    },
    action: r.action,
    target: { type: r.target_type, id: r.target_id },
    env: r.env,
    changes: JSON.parse(r.changes) as AuditEntry['changes'],
    request_id: r.request_id,
    ip: r.ip,
    user_agent: r.user_agent,
  };
}

/** The actions an `action` filter names: itself, or every action it is a prefix of (ending in `.`); none: unknown. */
export function actionsOf(filter: string): AuditAction[] {
  if (filter.endsWith('.')) return AUDIT_ACTIONS.filter((a) => a.startsWith(filter));
  return AUDIT_ACTIONS.filter((a) => a === filter);
}

/**
 * The audit log (docs/api.md#audit-log): the list (admins; a key sees its environment's entries and
 * the workspace-level ones), the export, the chain's verification and the retention purge.
 */
export function createAuditService(deps: {
  db: Db;
  clock: Clock;
  /** Writes the sequencer's rounds and the purge's entry. */
  uow: UnitOfWork;
  /** Numbers pending entries: every read of the log first numbers what is left (after a crash, say). */
  sequencer: AuditSequencer;
  retentionDays: number;
}) {
  const { db, clock } = deps;

  function filterOf(
    workspaceId: string,
    envs: AuditFilter['envs'],
    q: AuditQuery,
    order: 'asc' | 'desc',
    limit: number,
  ): AuditFilter {
    const actions = q.action === undefined ? undefined : actionsOf(q.action);
    if (actions?.length === 0) {
      throw fieldError('action', 'invalid_value', 'action is not an audited action nor a prefix of one ending in ".".');
    }
    const time = (field: 'from' | 'to', v: string | undefined) => {
      if (v === undefined) return undefined;
      const ms = Date.parse(v);
      if (Number.isNaN(ms)) throw fieldError(field, 'invalid_value', `${field} is not an ISO 8601 time.`);
      return isoAt(ms);
    };
    return {
      workspaceId,
      envs,
      actorId: q.actor_id,
      actions,
      targetId: q.target_id,
      env: q.env,
      from: time('from', q.from),
      to: time('to', q.to),
      order,
      limit,
    };
  }

  /** One page, newest first; 403 for anyone but an admin. Throws ValidationError for a bad filter or cursor. */
  async function list(p: Principal, q: AuditQuery & { cursor?: string; limit?: number }): Promise<AuditPage> {
    requireAdmin(p);
    const envs = p.kind === 'api_key' ? { values: [p.env] as Env[], orNull: true } : undefined;
    return page(p.workspaceId, envs, q);
  }

  /** A page of any workspace's log (the CLI), newest first, or oldest first with `order: 'asc'`. */
  async function page(
    workspaceId: string,
    envs: AuditFilter['envs'],
    q: AuditQuery & { cursor?: string; limit?: number },
    order: 'asc' | 'desc' = 'desc',
  ): Promise<AuditPage> {
    await deps.sequencer.flush(deps.uow, db, workspaceId);
    const limit = q.limit ?? 20;
    const f = filterOf(workspaceId, envs, q, order, limit + 1);
    let offset = 0;
    if (q.cursor !== undefined) {
      const c = decodeCursor(q.cursor);
      const seq = Number(c.after);
      if (!Number.isSafeInteger(seq) || seq < 0 || c.order !== order) {
        throw fieldError('cursor', 'invalid_value', 'cursor is not a next_cursor issued by this list.');
      }
      f.afterSeq = seq;
      offset = c.offset ?? 0;
    }
    const [rows, total] = await Promise.all([repo.list(db, f), repo.count(db, { ...f, afterSeq: undefined })]);
    const more = rows.length > limit;
    const items = rows.slice(0, limit).map(toAuditEntry);
    const last = items.at(-1);
    return {
      items,
      total,
      limit,
      offset,
      nextCursor: more && last ? encodeCursor(String(last.seq), offset + items.length, order) : null,
    };
  }

  /** Every entry of the filtered range, oldest first, in batches (the CLI's export). */
  async function* exportRange(workspaceId: string, q: AuditQuery): AsyncGenerator<AuditEntry> {
    let cursor: string | undefined;
    do {
      const p = await page(workspaceId, undefined, { ...q, cursor, limit: 100 }, 'asc');
      yield* p.items;
      cursor = p.nextCursor ?? undefined;
    } while (cursor);
  }

  /**
   * Recomputes one workspace's chain from its anchor: every seq present in order, every hash over the
   * previous one, the last equal to the head's. Names the first entry edited, removed or reordered.
   */
  async function verifyWorkspace(workspaceId: string): Promise<ChainCheck> {
    const ends = await chainEnds(workspaceId);
    if (!ends) return { workspaceId, ok: true, entries: 0 };
    return { workspaceId, ...(await walkChain(ends, chainRows(workspaceId, ends))) };
  }

  /** A workspace's chain's anchor and head (after numbering what is pending); undefined: no entries yet. */
  async function chainEnds(workspaceId: string): Promise<ChainEnds | undefined> {
    const head = await repo.head(db, workspaceId);
    if (!head) return undefined;
    return {
      anchor: { seq: Number(head.anchor_seq), hash: head.anchor_hash },
      head: { seq: Number(head.seq), hash: head.hash },
    };
  }

  /** The chain's entries from its anchor through its head, as stored (hash included), in batches. */
  async function* chainRows(workspaceId: string, ends: ChainEnds, batch = VERIFY_BATCH) {
    let seq = ends.anchor.seq;
    for (;;) {
      const rows = await repo.chain(db, workspaceId, seq, batch);
      for (const row of rows) {
        if (Number(row.seq) > ends.head.seq) return;
        yield row;
      }
      const last = rows.at(-1);
      if (rows.length < batch || !last || Number(last.seq) >= ends.head.seq) return;
      seq = Number(last.seq);
    }
  }

  /** The chain's ends for an export, after numbering what is pending (PostgreSQL's sequencer). */
  async function exportEnds(workspaceId: string): Promise<ChainEnds | undefined> {
    await deps.sequencer.flush(deps.uow, db, workspaceId);
    return chainEnds(workspaceId);
  }

  /** Every workspace's chain (or one), checked from its anchor. */
  async function verify(workspaceId?: string): Promise<ChainCheck[]> {
    await deps.sequencer.flush(deps.uow, db, workspaceId);
    const ids = workspaceId ? [workspaceId] : (await repo.heads(db)).map((h) => h.workspace_id);
    const out: ChainCheck[] = [];
    for (const id of ids) out.push(await verifyWorkspace(id));
    return out;
  }

  /**
   * Deletes each workspace's entries older than the retention (AUDIT_RETENTION_DAYS; an entry exactly
   * that old stays) in batches of at most `batch` entries, each its own change that makes its last deleted
   * entry (hash and seq) the chain's anchor, so a run killed between batches leaves a chain that verifies.
   * The workspace's last batch records one `audit.purged` entry with the run's count. Returns how many
   * entries it deleted.
   */
  async function purgeExpired(u: Unit<SystemActor>, batch = PURGE_BATCH_ROWS): Promise<number> {
    await deps.sequencer.flush(deps.uow, db);
    const cutoff = isoAt(clock.now() - deps.retentionDays * DAY_MS);
    let purged = 0;
    for (const head of await repo.heads(db)) {
      const ws = head.workspace_id;
      const last = await repo.lastBefore(db, ws, cutoff);
      const firstAnchor = Number(head.anchor_seq);
      if (!last || Number(last.seq) <= firstAnchor) continue;
      let anchor = firstAnchor;
      let done = 0;
      while (anchor < Number(last.seq)) {
        const removed = await u.run(async ({ trx, audit }) => {
          const through = await repo.nthAfter(trx, ws, anchor, Number(last.seq), batch);
          if (!through) return { n: 0, seq: anchor };
          const n = await repo.purgeThrough(trx, ws, Number(through.seq), through.hash);
          if (Number(through.seq) >= Number(last.seq) && done + n > 0) {
            audit.record({
              action: 'audit.purged',
              target: { type: 'audit_log', id: ws },
              env: null,
              workspaceId: ws,
              changes: {
                entries_purged: { before: null, after: done + n },
                anchor_seq: { before: firstAnchor, after: Number(last.seq) },
              },
            });
          }
          return { n, seq: Number(through.seq) };
        });
        if (removed.seq <= anchor) break;
        anchor = removed.seq;
        done += removed.n;
      }
      purged += done;
    }
    return purged;
  }

  return { list, page, exportRange, verify, purgeExpired, exportEnds, chainRows };
}
export type AuditService = ReturnType<typeof createAuditService>;
