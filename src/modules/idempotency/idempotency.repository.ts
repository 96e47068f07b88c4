import type { Db } from '../../db/dialect.js';
import type { IdempotencyKeysTable } from '../../db/types.js';
import type { Tenant } from '../../kernel/principal.js';
import { countByWorkspace, PURGE_BATCH_ROWS } from '../../platform/batched-purge.js';
import type { WriteTx } from '../../platform/unit-of-work.js';

export type IdempotencyRecord = IdempotencyKeysTable;

const where = (db: Db, t: Tenant, key: string) =>
  db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('workspace_id', '=', t.workspaceId)
    .where('env', '=', t.env)
    .where('key', '=', key);

/** SQL for the stored responses of docs/api.md#idempotency, one row per (workspace, environment, key). */
export const idempotencyRepository = {
  find(db: Db, t: Tenant, key: string): Promise<IdempotencyRecord | undefined> {
    return where(db, t, key).executeTakeFirst();
  },

  /**
   * Inserts the record unless one exists; true when inserted. An insert racing another transaction's
   * uncommitted insert of the same key waits for that transaction, then inserts nothing.
   */
  async insertIfAbsent(db: WriteTx, row: IdempotencyRecord): Promise<boolean> {
    const r = await db
      .insertInto('idempotency_keys')
      .values(row)
      .onConflict((oc) => oc.columns(['workspace_id', 'env', 'key']).doNothing())
      .executeTakeFirst();
    return Number(r.numInsertedOrUpdatedRows ?? 0) === 1;
  },

  /** Replaces the record of the key (a stale or expired one taken over). */
  async replace(db: WriteTx, row: IdempotencyRecord): Promise<void> {
    await db
      .updateTable('idempotency_keys')
      .set({
        request_hash: row.request_hash,
        state: row.state,
        status_code: row.status_code,
        response_body: row.response_body,
        locked_until: row.locked_until,
        expires_at: row.expires_at,
        created_at: row.created_at,
      })
      .where('workspace_id', '=', row.workspace_id)
      .where('env', '=', row.env)
      .where('key', '=', row.key)
      .execute();
  },

  /** Stores the response of a record claimed in the same transaction. */
  async finish(db: WriteTx, t: Tenant, key: string, status: number, body: string): Promise<void> {
    await db
      .updateTable('idempotency_keys')
      .set({ state: 'done', status_code: status, response_body: body })
      .where('workspace_id', '=', t.workspaceId)
      .where('env', '=', t.env)
      .where('key', '=', key)
      .execute();
  },

  /** Deletes the record if it is still the one created at `createdAt`. */
  async deleteIf(db: WriteTx, t: Tenant, key: string, createdAt: string): Promise<void> {
    await db
      .deleteFrom('idempotency_keys')
      .where('workspace_id', '=', t.workspaceId)
      .where('env', '=', t.env)
      .where('key', '=', key)
      .where('created_at', '=', createdAt)
      .execute();
  },

  /** Deletes up to `limit` of the records expired at `at`; returns how many per workspace. */
  async purgeBefore(db: WriteTx, at: string, limit = PURGE_BATCH_ROWS): Promise<Map<string, number>> {
    const rows = await db
      .selectFrom('idempotency_keys')
      .select(['workspace_id', 'env', 'key'])
      .where('expires_at', '<=', at)
      .limit(limit)
      .execute();
    if (rows.length === 0) return new Map();
    await db
      .deleteFrom('idempotency_keys')
      .where((eb) =>
        eb(
          eb.refTuple('workspace_id', 'env', 'key'),
          'in',
          rows.map((r) => eb.tuple(r.workspace_id, r.env, r.key)),
        ),
      )
      .execute();
    return countByWorkspace(rows);
  },
};
