import { type Db, readJson } from '../../db/dialect.js';
import { findInScope, pageById } from '../../db/keyset.js';
import { prepared } from '../../db/prepared.js';
import type { WebhooksTable } from '../../db/types.js';
import type { PageRequest } from '../../lib/paging.js';
import type { Scope } from '../resources/resources.repository.js';
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

// Performance (docs/performance.md, change 2): every resource write reads this (the outbox fan-out); built and compiled once.
const enabledQuery = prepared((db, $) =>
  db
    .selectFrom('webhooks')
    .select(['id', 'events'])
    .where('workspace_id', '=', $('workspaceId'))
    .where('env', '=', $('env'))
    .where('status', '=', 'enabled')
    .orderBy('id'),
);

/** SQL for webhooks, confined to one workspace and environment (docs/api.md#environments). */
export const webhooksRepository = {
  insert(db: Db, row: WebhooksTable) {
    return db.insertInto('webhooks').values(row).execute();
  },

  find(db: Db, scope: Scope, id: string): Promise<WebhooksTable | undefined> {
    return findInScope(db, 'webhooks', scope, id);
  },

  async count(db: Db, scope: Scope): Promise<number> {
    const r = await db
      .selectFrom('webhooks')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('workspace_id', '=', scope.workspaceId)
      .where('env', '=', scope.env)
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  },

  /** The enabled webhooks an event of this scope fans out to (≤ 16, docs/api.md#webhooks). */
  async listEnabled(db: Db, scope: Scope): Promise<Pick<WebhooksTable, 'id' | 'events'>[]> {
    return (await enabledQuery.execute(db, { workspaceId: scope.workspaceId, env: scope.env })).rows;
  },

  list(db: Db, scope: Scope, page: PageRequest) {
    return pageById(
      db,
      'webhooks',
      (eb) => eb.and([eb('workspace_id', '=', scope.workspaceId), eb('env', '=', scope.env)]),
      page,
    );
  },

  /** Deletes the webhook and every delivery still pending for it (docs/api.md#webhook-deliveries: cancelled before the 204). */
  async delete(db: Db, scope: Scope, id: string): Promise<boolean> {
    const r = await db
      .deleteFrom('webhooks')
      .where('id', '=', id)
      .where('workspace_id', '=', scope.workspaceId)
      .where('env', '=', scope.env)
      .executeTakeFirst();
    if (Number(r.numDeletedRows) !== 1) return false;
    const ofWebhook = db.selectFrom('deliveries').select('id').where('webhook_id', '=', id);
    await db.deleteFrom('delivery_attempts').where('delivery_id', 'in', ofWebhook).execute();
    await db.deleteFrom('deliveries').where('webhook_id', '=', id).execute();
    return true;
  },
};
