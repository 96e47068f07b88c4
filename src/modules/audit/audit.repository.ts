import { type Db, dialectOf } from '../../db/dialect.js';
import { type Param, prepared } from '../../db/prepared.js';
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

// Performance (docs/performance.md): every change runs these; built and compiled once (src/db/prepared.ts).
const advanceQuery = prepared((db, $: Param<{ ws: string; n: number }>) =>
  db
    .insertInto('audit_heads')
    .values({ workspace_id: $('ws'), seq: $('n'), hash: '', anchor_seq: 0, anchor_hash: '' })
    .onConflict((oc) =>
      oc.column('workspace_id').doUpdateSet((eb) => ({ seq: eb('audit_heads.seq', '+', eb.ref('excluded.seq')) })),
    )
    .returning(['seq', 'hash']),
);

const entryValues = ($: Param<AuditEntriesTable>) => ({
  id: $('id'),
  workspace_id: $('workspace_id'),
  seq: $('seq'),
  time: $('time'),
  actor_type: $('actor_type'),
  actor_id: $('actor_id'),
  actor_name: $('actor_name'),
  actor_user_id: $('actor_user_id'),
  action: $('action'),
  target_type: $('target_type'),
  target_id: $('target_id'),
  env: $('env'),
  changes: $('changes'),
  request_id: $('request_id'),
  ip: $('ip'),
  user_agent: $('user_agent'),
  hash: $('hash'),
});

const insertQuery = prepared((db, $: Param<AuditEntriesTable>) =>
  db.insertInto('audit_entries').values(entryValues($)),
);

const setHeadHashQuery = prepared((db, $: Param<{ ws: string; hash: string }>) =>
  db
    .updateTable('audit_heads')
    .set({ hash: $('hash') })
    .where('workspace_id', '=', $('ws')),
);

/** PostgreSQL: the entry and the head's new hash in one statement (a data-modifying WITH). */
const insertWithHeadQuery = prepared((db, $: Param<AuditEntriesTable>) =>
  db
    .with('entry', (w) => w.insertInto('audit_entries').values(entryValues($)))
    .updateTable('audit_heads')
    .set({ hash: $('hash') })
    .where('workspace_id', '=', $('workspace_id')),
);

/** The audit log's two tables (audit_entries, audit_heads): written only in the write runner's transaction. */
export const auditRepository = {
  /**
   * Moves the workspace's head on by `n` entries and returns where it was: one upsert, which creates the
   * head with the workspace's first entries. It takes the head row's lock (PostgreSQL), so the writers
   * of one workspace number their entries one after another.
   */
  async advanceHead(trx: WriteTx, workspaceId: string, n: number): Promise<{ seq: number; hash: string }> {
    const { rows } = await advanceQuery.execute(trx, { ws: workspaceId, n });
    const row = rows[0];
    if (!row) throw new Error(`audit head of ${workspaceId} missing`);
    return { seq: Number(row.seq) - n, hash: row.hash };
  },

  /**
   * Inserts a workspace's new entries (in `seq` order) and makes the last one's hash the head's. Where
   * a statement may hold two writes (PostgreSQL), the last entry and the head go in one round trip.
   */
  async append(trx: WriteTx, workspaceId: string, rows: readonly AuditEntriesTable[]): Promise<void> {
    const last = rows.at(-1);
    if (!last) return;
    const together = dialectOf(trx).writableCtes;
    for (const row of together ? rows.slice(0, -1) : rows) await insertQuery.execute(trx, row);
    if (together) await insertWithHeadQuery.execute(trx, last);
    else await setHeadHashQuery.execute(trx, { ws: workspaceId, hash: last.hash });
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
