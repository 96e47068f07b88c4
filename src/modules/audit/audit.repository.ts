import type { Db } from '../../db/dialect.js';
import type { AuditEntriesTable, AuditHeadsTable, Env } from '../../db/types.js';
import type { AuditAction } from '../../kernel/audit-actions.js';
import type { WriteTx } from '../auth/write-runner.js';

/** What the list asks for (docs/api.md#audit-log): every filter optional; `envs` is what the caller may see. */
export interface AuditFilter {
  workspaceId: string;
  /** The environments visible (a key: its own and null); undefined: all. */
  envs?: { values: Env[]; orNull: boolean };
  actorId?: string;
  /** One action, or those of a prefix. */
  actions?: AuditAction[];
  targetId?: string;
  env?: Env;
  /** ISO times, inclusive. */
  from?: string;
  to?: string;
  /** Older than this seq (newest first), or newer (oldest first). */
  afterSeq?: number;
  order: 'asc' | 'desc';
  limit: number;
}

/** The entries of `f`'s workspace its filters and position keep. */
function filtered(db: Db, f: AuditFilter) {
  let q = db.selectFrom('audit_entries').where('workspace_id', '=', f.workspaceId);
  if (f.envs) {
    const { values, orNull } = f.envs;
    q = q.where((eb) => {
      const ors = [];
      if (values.length > 0) ors.push(eb('env', 'in', values));
      if (orNull) ors.push(eb('env', 'is', null));
      return eb.or(ors);
    });
  }
  if (f.actorId !== undefined) q = q.where('actor_id', '=', f.actorId);
  if (f.actions !== undefined) q = q.where('action', 'in', f.actions);
  if (f.targetId !== undefined) q = q.where('target_id', '=', f.targetId);
  if (f.env !== undefined) q = q.where('env', '=', f.env);
  if (f.from !== undefined) q = q.where('time', '>=', f.from);
  if (f.to !== undefined) q = q.where('time', '<=', f.to);
  if (f.afterSeq !== undefined) q = q.where('seq', f.order === 'desc' ? '<' : '>', f.afterSeq);
  return q;
}

/** The audit log's two tables (audit_entries, audit_heads): written only in the write runner's transaction. */
export const auditRepository = {
  /**
   * Moves the workspace's head on by `n` entries and returns where it was. The update takes the head
   * row's lock (PostgreSQL), so the writers of one workspace number their entries one after another.
   */
  async advanceHead(trx: WriteTx, workspaceId: string, n: number): Promise<{ seq: number; hash: string }> {
    const bump = () =>
      trx
        .updateTable('audit_heads')
        .set((eb) => ({ seq: eb('seq', '+', n) }))
        .where('workspace_id', '=', workspaceId)
        .returning(['seq', 'hash'])
        .executeTakeFirst();
    let row = await bump();
    if (!row) {
      await trx
        .insertInto('audit_heads')
        .values({ workspace_id: workspaceId, seq: 0, hash: '', anchor_seq: 0, anchor_hash: '' })
        .onConflict((oc) => oc.column('workspace_id').doNothing())
        .execute();
      row = await bump();
    }
    if (!row) throw new Error(`audit head of ${workspaceId} missing`);
    return { seq: Number(row.seq) - n, hash: row.hash };
  },

  async setHeadHash(trx: WriteTx, workspaceId: string, hash: string): Promise<void> {
    await trx.updateTable('audit_heads').set({ hash }).where('workspace_id', '=', workspaceId).execute();
  },

  async insert(trx: WriteTx, rows: AuditEntriesTable[]): Promise<void> {
    await trx.insertInto('audit_entries').values(rows).execute();
  },

  head(db: Db, workspaceId: string): Promise<AuditHeadsTable | undefined> {
    return db.selectFrom('audit_heads').selectAll().where('workspace_id', '=', workspaceId).executeTakeFirst();
  },

  heads(db: Db): Promise<AuditHeadsTable[]> {
    return db.selectFrom('audit_heads').selectAll().orderBy('workspace_id').execute();
  },

  /** Entries of a workspace after `afterSeq`, oldest first (verify walks the chain with it). */
  chain(db: Db, workspaceId: string, afterSeq: number, limit: number): Promise<AuditEntriesTable[]> {
    return db
      .selectFrom('audit_entries')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('seq', '>', afterSeq)
      .orderBy('seq', 'asc')
      .limit(limit)
      .execute();
  },

  list(db: Db, f: AuditFilter): Promise<AuditEntriesTable[]> {
    return filtered(db, f).selectAll().orderBy('seq', f.order).limit(f.limit).execute();
  },

  /** How many entries match `f` (its position and limit aside). */
  async count(db: Db, f: AuditFilter): Promise<number> {
    const row = await filtered(db, { ...f, afterSeq: undefined })
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  },

  /** The newest entry of a workspace at or before `before` (ISO), which a purge removes with all before it. */
  lastBefore(db: Db, workspaceId: string, before: string): Promise<{ seq: number; hash: string } | undefined> {
    return db
      .selectFrom('audit_entries')
      .select(['seq', 'hash'])
      .where('workspace_id', '=', workspaceId)
      .where('time', '<', before)
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirst();
  },

  /** Deletes a workspace's entries up to `seq` and makes the last of them the chain's anchor; returns how many. */
  async purgeThrough(trx: WriteTx, workspaceId: string, seq: number, hash: string): Promise<number> {
    const res = await trx
      .deleteFrom('audit_entries')
      .where('workspace_id', '=', workspaceId)
      .where('seq', '<=', seq)
      .executeTakeFirst();
    await trx
      .updateTable('audit_heads')
      .set({ anchor_seq: seq, anchor_hash: hash })
      .where('workspace_id', '=', workspaceId)
      .where('anchor_seq', '<', seq)
      .execute();
    return Number(res.numDeletedRows);
  },
};
