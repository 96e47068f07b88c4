import { type Db, readJson } from '../../db/dialect.js';
import { batchAfterId, findInScope, pageById } from '../../db/keyset.js';
import { withRowLock } from '../../db/row-locks.js';
import { sealedUnderOther, toSeal } from '../../db/sealed-values.js';
import type { WebhooksTable } from '../../db/types.js';
import type { Env } from '../../kernel/environments.js';
import type { Tenant } from '../../kernel/principal.js';
import type { PageRequest } from '../../lib/paging.js';
import type { SealedColumn, StoredSecret } from '../../platform/sealed-columns.js';
import type { WriteTx } from '../../platform/unit-of-work.js';
import { secretAt } from './secret-at.js';
import type { Webhook } from './webhooks.schemas.js';

/** Row → API object (never a secret); a previous secret that expired by `now` is not shown. */
export function toWebhook(row: WebhooksTable, now: string): Webhook {
  const overlapEnd = row.previous_secret_expires_at ?? null;
  return {
    id: row.id,
    url: row.url,
    events: readJson<string[]>(row.events),
    label: row.label,
    status: row.status,
    disabled_reason: row.status === 'disabled' ? (row.disabled_reason === 'failing' ? 'failing' : 'manual') : null,
    failing_since: row.failing_since ?? null,
    previous_secret_expires_at: overlapEnd !== null && overlapEnd > now ? overlapEnd : null,
    workspace_id: row.workspace_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** SQL for webhooks, confined to one workspace and environment (docs/api.md#environments). */
export const webhooksRepository = {
  /** A batch of the workspace's rows after `afterId`, oldest first (an export's keyset walk). */
  exportBatch: (db: Db, workspaceId: string, env: Env, afterId: string | null, limit: number) =>
    batchAfterId(db, 'webhooks', workspaceId, afterId, limit, { env }),
  insert(db: WriteTx, row: WebhooksTable) {
    return db.insertInto('webhooks').values(row).execute();
  },

  /** One webhook of the tenant; `lock` reads it under a row lock (PostgreSQL) so concurrent changes queue. */
  find(db: Db, tenant: Tenant, id: string, lock = false): Promise<WebhooksTable | undefined> {
    if (!lock) return findInScope(db, 'webhooks', tenant, id);
    const q = db
      .selectFrom('webhooks')
      .selectAll()
      .where('id', '=', id)
      .where('workspace_id', '=', tenant.workspaceId)
      .where('env', '=', tenant.env);
    return withRowLock(db, q).executeTakeFirst();
  },

  async count(db: Db, tenant: Tenant): Promise<number> {
    const r = await db
      .selectFrom('webhooks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('workspace_id', '=', tenant.workspaceId)
      .where('env', '=', tenant.env)
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  },

  list(db: Db, tenant: Tenant, page: PageRequest) {
    return pageById(
      db,
      'webhooks',
      (eb) => eb.and([eb('workspace_id', '=', tenant.workspaceId), eb('env', '=', tenant.env)]),
      page,
    );
  },

  /** Writes changed fields of one webhook of the scope; returns whether it exists. */
  async update(db: WriteTx, tenant: Tenant, id: string, patch: Partial<WebhooksTable>): Promise<boolean> {
    const r = await db
      .updateTable('webhooks')
      .set(patch)
      .where('id', '=', id)
      .where('workspace_id', '=', tenant.workspaceId)
      .where('env', '=', tenant.env)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },

  /**
   * The webhooks `ids` (any tenant), read under row locks in id order (the delivery worker's
   * health updates: the same order as every other writer, webhook row before its deliveries).
   */
  async lockMany(db: WriteTx, ids: string[]): Promise<Map<string, WebhooksTable>> {
    if (ids.length === 0) return new Map();
    const q = db.selectFrom('webhooks').selectAll().where('id', 'in', ids).orderBy('id');
    const rows = await withRowLock(db, q).execute();
    return new Map(rows.map((r) => [r.id, r]));
  },

  /** Writes the health fields (and, on an automatic disable, status and reason) of one webhook. */
  async updateHealth(
    db: WriteTx,
    id: string,
    patch: Pick<
      Partial<WebhooksTable>,
      | 'status'
      | 'disabled_reason'
      | 'failing_since'
      | 'failed_attempts'
      | 'failing_notified_at'
      | 'unhealthy_notified_at'
      | 'updated_at'
    >,
  ): Promise<void> {
    await db.updateTable('webhooks').set(patch).where('id', '=', id).execute();
  },

  /** Deletes the webhook and every delivery still pending for it (docs/api.md#webhook-deliveries: cancelled before the 204). */
  async delete(db: WriteTx, tenant: Tenant, id: string): Promise<boolean> {
    const r = await db
      .deleteFrom('webhooks')
      .where('id', '=', id)
      .where('workspace_id', '=', tenant.workspaceId)
      .where('env', '=', tenant.env)
      .executeTakeFirst();
    if (Number(r.numDeletedRows) !== 1) return false;
    const ofWebhook = db.selectFrom('deliveries').select('id').where('webhook_id', '=', id);
    await db.deleteFrom('delivery_attempts').where('delivery_id', 'in', ofWebhook).execute();
    await db.deleteFrom('deliveries').where('webhook_id', '=', id).execute();
    return true;
  },
};

/** A webhook's signing secrets as sealed columns (src/platform/sealed-columns.ts): `secret`, `previous_secret`. */
export const webhookSealedColumns: SealedColumn[] = (['secret', 'previous_secret'] as const).map((name) => ({
  column: `webhooks.${name}`,
  async toSeal(db: Db, kid: string | null, limit: number): Promise<StoredSecret[]> {
    const rows = await db
      .selectFrom('webhooks')
      .select(['id', 'workspace_id', `${name} as stored`])
      .where(name, 'is not', null)
      .where(toSeal(name, kid))
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ at: secretAt(r.workspace_id, r.id, name), stored: r.stored as string }));
  },
  async replace(db: WriteTx, s: StoredSecret, next: string): Promise<boolean> {
    const r = await db
      .updateTable('webhooks')
      .set({ [name]: next })
      .where('id', '=', s.at.row)
      .where(name, '=', s.stored)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  },
  async sealedUnderOther(db: Db, kids: readonly string[]): Promise<string | undefined> {
    const r = await db
      .selectFrom('webhooks')
      .select(`${name} as stored`)
      .where(name, 'is not', null)
      .where(sealedUnderOther(name, kids))
      .limit(1)
      .executeTakeFirst();
    return r?.stored ?? undefined;
  },
}));
