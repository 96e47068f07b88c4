import { type Db, later } from '../../db/dialect.js';
import { containing } from '../../db/like.js';
import { type Param, prepared } from '../../db/prepared.js';
import type { AuditEntriesTable, AuditHeadsTable, AuditPendingTable, Env } from '../../db/types.js';
import type { AuditAction } from '../../kernel/audit-actions.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

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

// Performance (docs/performance.md#the-audit-numbering): every change runs these; built and compiled once (src/db/prepared.ts).

const entryFields = ($: Param<AuditEntriesTable>) => ({
  id: $('id'),
  workspace_id: $('workspace_id'),
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
});

const pendingInsertQuery = prepared((db, $: Param<AuditPendingTable>) =>
  db.insertInto('audit_pending').values({ ...entryFields($ as unknown as Param<AuditEntriesTable>), pos: $('pos') }),
);

const lockHeadQuery = prepared((db, $: Param<{ ws: string }>) =>
  db
    .insertInto('audit_heads')
    .values({ workspace_id: $('ws'), seq: 0, hash: '', anchor_seq: 0, anchor_hash: '' })
    .onConflict((oc) => oc.column('workspace_id').doUpdateSet((eb) => ({ seq: eb.ref('audit_heads.seq') })))
    .returning(['seq', 'hash']),
);

const insertQuery = prepared((db, $: Param<AuditEntriesTable>) =>
  db.insertInto('audit_entries').values({
    ...entryFields($),
    seq: $('seq'),
    personal_salt: $('personal_salt'),
    commitments: $('commitments'),
    hash: $('hash'),
  }),
);

const setHeadQuery = prepared((db, $: Param<{ ws: string; seq: number; hash: string }>) =>
  db
    .updateTable('audit_heads')
    .set({ seq: $('seq'), hash: $('hash') })
    .where('workspace_id', '=', $('ws')),
);

/** The audit log's three tables (audit_entries, audit_heads, audit_pending): written only in a change of the unit of work. */
export const auditRepository = {
  /** Writes a change's entries, unnumbered, in its transaction (the sequencer numbers them after the commit). */
  async addPending(trx: WriteTx, rows: readonly AuditPendingTable[]): Promise<void> {
    // Sent with the transaction's COMMIT where the dialect defers (dialect.ts, `later`).
    for (const row of rows) await pendingInsertQuery.later(trx, row);
  },

  /** One workspace's head (creating it) and where it is: the numbering in a change's transaction (SQLite). */
  async lockHead(trx: WriteTx, workspaceId: string): Promise<{ seq: number; hash: string }> {
    const { rows } = await lockHeadQuery.execute(trx, { ws: workspaceId });
    const row = rows[0];
    if (!row) throw new Error(`audit head of ${workspaceId} missing`);
    return { seq: Number(row.seq), hash: row.hash };
  },

  /** Numbered entries of one workspace, straight into the log, and its head moved to the last. */
  async append(trx: WriteTx, workspaceId: string, rows: readonly AuditEntriesTable[]): Promise<void> {
    const last = rows.at(-1);
    if (!last) return;
    for (const row of rows) await insertQuery.execute(trx, row);
    await setHeadQuery.execute(trx, { ws: workspaceId, seq: Number(last.seq), hash: last.hash });
  },

  /**
   * Takes the workspaces' heads (creating those missing), then reads their pending entries (at most `limit` in
   * all, each workspace's in the order they were written) with where each one's head is. Two statements, one
   * round trip where the dialect defers (`later`): the upsert locks the head rows (PostgreSQL) in the order given,
   * so sequencers in different processes take turns (callers give the ids sorted); the read that follows has a
   * snapshot of its own, taken once the locks are held, so it sees what a sequencer that held them before moved.
   */
  async lockedPending(
    trx: WriteTx,
    workspaceIds: readonly string[],
    limit: number,
  ): Promise<{ pending: AuditPendingTable[]; heads: Map<string, { seq: number; hash: string }> }> {
    await later(
      trx,
      trx
        .insertInto('audit_heads')
        .values(workspaceIds.map((ws) => ({ workspace_id: ws, seq: 0, hash: '', anchor_seq: 0, anchor_hash: '' })))
        .onConflict((oc) => oc.column('workspace_id').doUpdateSet((eb) => ({ seq: eb.ref('audit_heads.seq') })))
        .compile(),
    );
    const rows = await trx
      .selectFrom('audit_pending as p')
      .innerJoin('audit_heads as h', 'h.workspace_id', 'p.workspace_id')
      .selectAll('p')
      .select(['h.seq as head_seq', 'h.hash as head_hash'])
      .where('p.workspace_id', 'in', workspaceIds)
      .orderBy('p.workspace_id')
      .orderBy('p.pos')
      .orderBy('p.id')
      .limit(limit)
      .execute();
    const heads = new Map<string, { seq: number; hash: string }>();
    const pending = rows.map(({ head_seq, head_hash, ...r }) => {
      heads.set(r.workspace_id, { seq: Number(head_seq), hash: head_hash });
      return { ...r, pos: Number(r.pos) };
    });
    return { pending, heads };
  },

  /** The workspaces with pending entries (or whether `workspaceId` has any): what is left to number. */
  async pendingWorkspaces(db: Db, workspaceId?: string): Promise<string[]> {
    let q = db.selectFrom('audit_pending').select('workspace_id').distinct();
    if (workspaceId !== undefined) q = q.where('workspace_id', '=', workspaceId);
    const rows = await q.execute();
    return rows.map((r) => r.workspace_id);
  },

  /** Moves numbered entries in: inserts them, deletes them from pending, moves each head to its last. */
  async numbered(
    trx: WriteTx,
    rows: readonly AuditEntriesTable[],
    heads: ReadonlyMap<string, { seq: number; hash: string }>,
  ): Promise<void> {
    if (rows.length === 0) return;
    // Nothing is read back: sent with the COMMIT where the dialect defers.
    await later(
      trx,
      trx
        .insertInto('audit_entries')
        .values([...rows])
        .compile(),
    );
    await later(
      trx,
      trx
        .deleteFrom('audit_pending')
        .where(
          'id',
          'in',
          rows.map((r) => r.id),
        )
        .compile(),
    );
    for (const [ws, head] of heads) await setHeadQuery.later(trx, { ws, seq: head.seq, hash: head.hash });
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

  /**
   * The entry a purge batch deletes through: the `n`th after `afterSeq` (the anchor), or the one at `maxSeq`
   * when fewer lie between; undefined when none does.
   */
  nthAfter(
    db: Db,
    workspaceId: string,
    afterSeq: number,
    maxSeq: number,
    n: number,
  ): Promise<{ seq: number; hash: string } | undefined> {
    return db
      .selectFrom((eb) =>
        eb
          .selectFrom('audit_entries')
          .select(['seq', 'hash'])
          .where('workspace_id', '=', workspaceId)
          .where('seq', '>', afterSeq)
          .where('seq', '<=', maxSeq)
          .orderBy('seq', 'asc')
          .limit(n)
          .as('batch'),
      )
      .select(['seq', 'hash'])
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirst();
  },

  /**
   * The entries that name a person (docs/data-lifecycle.md#erasing-a-person): by one of their user ids as the actor,
   * the key's owner or the target, or whose changes quote one of `needles` (their email, their name as JSON).
   */
  personEntries(trx: WriteTx, userIds: readonly string[], needles: readonly string[]): Promise<AuditEntriesTable[]> {
    return trx
      .selectFrom('audit_entries')
      .selectAll()
      .where((eb) =>
        eb.or([
          eb.and([eb('actor_type', '=', 'user'), eb('actor_id', 'in', userIds)]),
          eb('actor_user_id', 'in', userIds),
          eb('target_id', 'in', userIds),
          ...needles.map((n) => eb('changes', 'like', containing(n))),
        ]),
      )
      .orderBy('workspace_id')
      .orderBy('seq')
      .execute();
  },

  /** An entry's personal fields replaced and its salt deleted: its commitments, and so its hash, stay. */
  async erasePersonal(
    trx: WriteTx,
    id: string,
    set: Pick<AuditEntriesTable, 'actor_name' | 'ip' | 'user_agent' | 'changes'>,
  ): Promise<void> {
    await trx
      .updateTable('audit_entries')
      .set({ ...set, personal_salt: null })
      .where('id', '=', id)
      .execute();
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
