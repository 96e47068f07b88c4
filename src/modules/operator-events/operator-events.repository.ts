import type { Db } from '../../db/dialect.js';
import { withRowLockSkipping } from '../../db/row-locks.js';
import type { OperatorDeliveriesTable } from '../../db/types.js';
import type { WriteTx } from '../../platform/unit-of-work.js';
import type { AttemptResult } from '../delivery-engine/claims.js';

/** SQL of the operator's deliveries (docs/api.md#operator-events): their insert, the worker's claims, the CLI's list. */
export const operatorEventsRepository = {
  async insert(db: WriteTx, row: OperatorDeliveriesTable): Promise<void> {
    await db.insertInto('operator_deliveries').values(row).execute();
  },

  /**
   * Claims up to `limit` due rows for `workerId` until `leaseUntil`, oldest due first; rows another worker holds are
   * skipped (withRowLockSkipping, docs/api.md#deployment).
   */
  async claim(
    db: WriteTx,
    opts: { now: string; leaseUntil: string; workerId: string; limit: number },
  ): Promise<OperatorDeliveriesTable[]> {
    if (opts.limit <= 0) return [];
    const due = withRowLockSkipping(
      db,
      db
        .selectFrom('operator_deliveries')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', opts.now)
        .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', opts.now)]))
        .orderBy('next_attempt_at')
        .orderBy('id')
        .limit(opts.limit),
    );
    const ids = (await due.execute()).map((r) => r.id);
    if (ids.length === 0) return [];
    await db
      .updateTable('operator_deliveries')
      .set({ lease_until: opts.leaseUntil, leased_by: opts.workerId })
      .where('id', 'in', ids)
      .execute();
    return db
      .selectFrom('operator_deliveries')
      .selectAll()
      .where('id', 'in', ids)
      .orderBy('next_attempt_at')
      .orderBy('id')
      .execute();
  },

  /** Writes attempts back, each only if `workerId` still holds the claim; returns how many were written. */
  async complete(db: WriteTx, workerId: string, results: AttemptResult[], now: string): Promise<number> {
    let written = 0;
    for (const r of results) {
      const u = await db
        .updateTable('operator_deliveries')
        .set((eb) =>
          r.attempt === null
            ? { status: r.status, next_attempt_at: null, lease_until: null, leased_by: null, updated_at: now }
            : {
                status: r.status,
                attempt_count: eb('attempt_count', '+', 1),
                next_attempt_at: r.nextAttemptAt,
                lease_until: null,
                leased_by: null,
                last_response_status: r.attempt.response_status,
                last_error: r.attempt.error,
                updated_at: now,
              },
        )
        .where('id', '=', r.deliveryId)
        .where('leased_by', '=', workerId)
        .where('status', '=', 'pending')
        .executeTakeFirst();
      written += Number(u.numUpdatedRows);
    }
    return written;
  },

  find(db: Db, id: string): Promise<OperatorDeliveriesTable | undefined> {
    return db.selectFrom('operator_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
  },

  /** The newest `limit` rows, newest first. */
  list(db: Db, limit: number): Promise<OperatorDeliveriesTable[]> {
    return db.selectFrom('operator_deliveries').selectAll().orderBy('id', 'desc').limit(limit).execute();
  },

  /** Due now again, whatever its state (one more attempt), unless a worker is attempting it. */
  async requeue(db: WriteTx, id: string, now: string): Promise<void> {
    await db
      .updateTable('operator_deliveries')
      .set({ status: 'pending', next_attempt_at: now, updated_at: now, lease_until: null, leased_by: null })
      .where('id', '=', id)
      .execute();
  },

  /** Deletes up to `limit` rows created before `cutoff`; returns how many. */
  async purgeBefore(db: WriteTx, cutoff: string, limit: number): Promise<number> {
    const ids = (
      await db.selectFrom('operator_deliveries').select('id').where('created_at', '<', cutoff).limit(limit).execute()
    ).map((r) => r.id);
    if (ids.length === 0) return 0;
    await db.deleteFrom('operator_deliveries').where('id', 'in', ids).execute();
    return ids.length;
  },
};
