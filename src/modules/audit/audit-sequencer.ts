import type { Db } from '../../db/dialect.js';
import type { AuditEntriesTable } from '../../db/types.js';
import { systemActor } from '../../kernel/principal.js';
import type { UnitOfWork } from '../../platform/unit-of-work.js';
import { auditRepository as repo } from './audit.repository.js';
import { numberAfter } from './audit-chain.js';

/** Entries numbered per transaction of the sequencer. */
const BATCH = 500;

/**
 * Numbers and chains pending entries (docs/api.md#audit-log): in one transaction of its own, it takes each
 * workspace's head in turn (in id order: its row lock orders the sequencers of every process, and the
 * order keeps two from waiting on each other), reads the workspace's pending entries, gives them the
 * next seqs and hashes, moves them to the log and the head on. The audit log's subscriber runs it after each
 * commit that recorded something, before the change's caller resumes, so an acknowledged change's entry is
 * numbered; reads of the log call `flush` first, which also numbers what a crash between a commit and
 * its numbering left.
 *
 * In one process, the changes that commit while a round is under way share the next round, whatever
 * their workspaces: many entries per transaction, one flush of the database for all of them.
 */
export function createAuditSequencer() {
  const actor = systemActor('scheduler:audit-sequence');
  let running: Promise<void> | undefined;
  let next: { workspaces: Set<string>; done: Promise<void> } | undefined;

  async function round(uow: UnitOfWork, workspaces: readonly string[]): Promise<void> {
    await uow.as(actor).run(async ({ trx }) => {
      let left = [...workspaces].sort();
      while (left.length > 0) {
        const { pending, heads } = await repo.lockedPending(trx, left, BATCH);
        const moved = new Map<string, { seq: number; hash: string }>();
        const rows: AuditEntriesTable[] = [];
        for (const ws of left) {
          const entries = pending.filter((p) => p.workspace_id === ws).map(({ pos: _pos, ...entry }) => entry);
          if (entries.length === 0) continue;
          const numbered = numberAfter(heads.get(ws) ?? { seq: 0, hash: '' }, entries);
          rows.push(...numbered.rows);
          moved.set(ws, numbered.head);
        }
        await repo.numbered(trx, rows, moved);
        // A full batch may have left some: the workspaces of its last entry and after it go round again.
        const last = rows.at(-1);
        left = rows.length < BATCH || !last ? [] : left.filter((ws) => ws >= last.workspace_id);
      }
    });
  }

  /** Numbers the pending entries of these workspaces, those committed before this call included, writing with `uow`. */
  function sequence(uow: UnitOfWork, workspaceIds: Iterable<string>): Promise<void> {
    // A round under way may have read the pending entries before ours committed: the next one will see them.
    if (!next) {
      const workspaces = new Set<string>();
      const done = (running ?? Promise.resolve())
        .catch(() => {})
        .then(() => {
          next = undefined;
          const r = round(uow, [...workspaces]);
          running = r;
          return r.finally(() => {
            if (running === r) running = undefined;
          });
        });
      next = { workspaces, done };
    }
    for (const id of workspaceIds) next.workspaces.add(id);
    return next.done;
  }

  /** Numbers every workspace's pending entries (or one's): what reads of the log and verify call first. */
  async function flush(uow: UnitOfWork, db: Db, workspaceId?: string): Promise<void> {
    const ids = await repo.pendingWorkspaces(db, workspaceId);
    if (ids.length > 0) await sequence(uow, ids);
  }

  return { sequence, flush };
}
export type AuditSequencer = ReturnType<typeof createAuditSequencer>;
