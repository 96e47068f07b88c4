import { type Db, readJson } from '../../db/dialect.js';
import { findInScope, pageById } from '../../db/keyset.js';
import type { WebhooksTable } from '../../db/types.js';
import type { PageRequest } from '../../lib/paging.js';
import type { Tenant } from '../../lib/principal.js';
import type { Webhook } from './webhooks.schemas.js';

/** Row → API object (never the secret). */
export function toWebhook(row: WebhooksTable): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: readJson<string[]>(row.events),
    label: row.label,
    status: 'enabled',
    workspace_id: row.workspace_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** SQL for webhooks, confined to one workspace and environment (docs/api.md#environments). */
export const webhooksRepository = {
  insert(db: Db, row: WebhooksTable) {
    return db.insertInto('webhooks').values(row).execute();
  },

  find(db: Db, tenant: Tenant, id: string): Promise<WebhooksTable | undefined> {
    return findInScope(db, 'webhooks', tenant, id);
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

  /** Deletes the webhook and every delivery still pending for it (docs/api.md#webhook-deliveries: cancelled before the 204). */
  async delete(db: Db, tenant: Tenant, id: string): Promise<boolean> {
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
