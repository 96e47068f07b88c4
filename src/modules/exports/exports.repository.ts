import type { Db } from '../../db/dialect.js';
import { pageById } from '../../db/keyset.js';
import type { ExportsTable } from '../../db/types.js';
import type { Env } from '../../kernel/environments.js';
import type { Page, PageRequest } from '../../lib/paging.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

/** SQL for `exports` (docs/data-lifecycle.md#export). */
export const exportsRepository = {
  async insert(trx: WriteTx, row: ExportsTable): Promise<void> {
    await trx.insertInto('exports').values(row).execute();
  },

  /** One export of the workspace; undefined for an unknown id or another workspace's. */
  find(db: Db, workspaceId: string, id: string): Promise<ExportsTable | undefined> {
    return db
      .selectFrom('exports')
      .selectAll()
      .where('id', '=', id)
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst();
  },

  /** The ids of every export of a workspace. */
  async idsOf(db: Db, workspaceId: string): Promise<string[]> {
    const rows = await db.selectFrom('exports').select('id').where('workspace_id', '=', workspaceId).execute();
    return rows.map((r) => r.id);
  },

  /**
   * A page of the workspace's exports in `page.order` (ids are time-sortable); `env`: only those asked for in that
   * environment or from the console or the CLI (env null), as an API key sees them.
   */
  list(db: Db, workspaceId: string, env: Env | null, page: PageRequest): Promise<Page<ExportsTable>> {
    return pageById(
      db,
      'exports',
      (eb) =>
        env === null
          ? eb('workspace_id', '=', workspaceId)
          : eb.and([eb('workspace_id', '=', workspaceId), eb.or([eb('env', 'is', null), eb('env', '=', env)])]),
      page,
    );
  },

  /** The oldest export to write: queued, or running under a lease that has lapsed (its run died). */
  due(db: Db, now: string, id?: string): Promise<ExportsTable | undefined> {
    let q = db.selectFrom('exports').selectAll();
    if (id !== undefined) q = q.where('id', '=', id);
    return q
      .where((eb) =>
        eb.or([
          eb('status', '=', 'queued'),
          eb.and([eb('status', '=', 'running'), eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', now)])]),
        ]),
      )
      .orderBy('id')
      .limit(1)
      .executeTakeFirst();
  },

  /**
   * Takes `row` for `by` until `leaseUntil`, if it is still as `due` read it (nobody else took it meanwhile);
   * true when taken. Progress starts again from zero.
   */
  async claim(trx: WriteTx, row: ExportsTable, by: string, now: string, leaseUntil: string): Promise<boolean> {
    let q = trx
      .updateTable('exports')
      .set({
        status: 'running',
        leased_by: by,
        lease_until: leaseUntil,
        attempts: row.attempts + 1,
        started_at: now,
        kinds_done: 0,
        rows_written: 0,
      })
      .where('id', '=', row.id)
      .where('status', '=', row.status)
      .where('attempts', '=', row.attempts);
    q = row.leased_by === null ? q.where('leased_by', 'is', null) : q.where('leased_by', '=', row.leased_by);
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  /** Progress of the run `by`, which renews its lease; false when the lease is no longer its own. */
  async progress(
    trx: WriteTx,
    id: string,
    by: string,
    p: { kinds_done: number; rows_written: number; lease_until: string },
  ): Promise<boolean> {
    const r = await trx
      .updateTable('exports')
      .set(p)
      .where('id', '=', id)
      .where('status', '=', 'running')
      .where('leased_by', '=', by)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  /** Ends the run `by` (ready or failed); false when the lease is no longer its own. */
  async finish(
    trx: WriteTx,
    id: string,
    by: string,
    set: Pick<ExportsTable, 'status' | 'finished_at'> & Partial<ExportsTable>,
  ): Promise<boolean> {
    const r = await trx
      .updateTable('exports')
      .set({ ...set, leased_by: null, lease_until: null })
      .where('id', '=', id)
      .where('status', '=', 'running')
      .where('leased_by', '=', by)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  /** Ready exports whose download expired by `now`: now `expired`; returns their ids. */
  async expire(trx: WriteTx, now: string): Promise<string[]> {
    const rows = await trx
      .selectFrom('exports')
      .select('id')
      .where('status', '=', 'ready')
      .where('expires_at', '<=', now)
      .execute();
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    await trx.updateTable('exports').set({ status: 'expired' }).where('id', 'in', ids).execute();
    return ids;
  },
};
