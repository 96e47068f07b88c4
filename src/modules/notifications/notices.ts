import type { NotificationCategory, NotificationsTable } from '../../db/types.js';
import { isoAt } from '../../kernel/clock.js';
import { newId } from '../../kernel/ids.js';
import type { NotificationTypeOf } from '../../kernel/notification-types.js';
import type { WriteTx } from '../auth/write-runner.js';
import type { EndpointNotice } from '../webhooks/endpoint-health.js';
import {
  type EndpointNoticeData,
  type InvoiceNoticeData,
  type LinkNoticeData,
  notificationTitle,
  type SecurityNoticeData,
  type UsageNoticeData,
} from './email-render.js';
import { notificationsRepository as repo } from './notifications.repository.js';
import type { NotificationsDeps } from './notifications-deps.js';
import type { Preferences } from './preferences.js';

/** A security event (always on: docs/notifications.md#security-notifications), written in the transaction of the change. */
export interface SecurityNotice {
  type: NotificationTypeOf<'security'>;
  workspaceId: string;
  /** The affected user(s), told whatever their role (a removed member is not: see docs/notifications.md). */
  users: string[];
  /** Whether the workspace's admins are told too. */
  admins: boolean;
  /** Not told even as an admin (a new member of their own addition: they get the invite). */
  except?: string;
  data: SecurityNoticeData;
}

/** An invite or password-reset email, written in the transaction that makes its link. */
export interface LinkNotice {
  type: 'invite' | 'password.reset';
  workspaceId: string;
  userId: string;
  /** The single-use link: kept in `secret` until the email is sent or given up. */
  url: string;
  data: LinkNoticeData;
}

/**
 * A usage or billing notification to the workspace's admins (on by default, per preferences: docs/notifications.md),
 * written in the caller's transaction: the threshold's record (usage) or the invoice's finalization.
 */
export type BillingNotice =
  | { type: NotificationTypeOf<'usage'>; workspaceId: string; data: UsageNoticeData }
  | { type: NotificationTypeOf<'billing'>; workspaceId: string; data: InvoiceNoticeData };

/**
 * The notices other modules write (docs/notifications.md), each in the transaction of its cause: one row
 * per recipient, per their preferences, and told to the integrations once per workspace.
 */
export function createNotices(deps: NotificationsDeps, prefs: Pick<Preferences, 'applyPreferences'>) {
  const { clock } = deps;
  const { applyPreferences } = prefs;

  /** Writes one notification per admin of the endpoint's workspace, in `trx` (the outcome's transaction). */
  async function endpointNotice(trx: WriteTx, notice: EndpointNotice): Promise<void> {
    const w = notice.webhook;
    const data: EndpointNoticeData = {
      webhook_id: w.id,
      url: w.url,
      label: w.label,
      env: w.env,
      at: notice.at,
      failing_since: w.failing_since ?? null,
      disable_after_h: deps.disableAfterH,
    };
    const now = isoAt(clock.now());
    const rows: NotificationsTable[] = (await deps.admins(trx, w.workspace_id)).map((u) => ({
      id: newId('notification'),
      workspace_id: w.workspace_id,
      user_id: u.id,
      category: 'webhooks',
      type: `endpoint.${notice.kind}`,
      data: JSON.stringify(data),
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: now,
      lease_until: null,
      leased_by: null,
      last_error: null,
      sent_at: null,
      created_at: now,
    }));
    await repo.insertMany(trx, await applyPreferences(trx, rows, 'webhooks'));
    const type = `endpoint.${notice.kind}`;
    await deps.forward?.(trx, {
      workspaceId: w.workspace_id,
      category: 'webhooks',
      type,
      title: notificationTitle(type as NotificationsTable['type'], data),
      data: { ...data },
      at: notice.at,
    });
  }

  function row(
    workspaceId: string,
    userId: string,
    category: NotificationCategory,
    type: NotificationsTable['type'],
    data: object,
    secret: string | null = null,
  ): NotificationsTable {
    const now = isoAt(clock.now());
    return {
      id: newId('notification'),
      workspace_id: workspaceId,
      user_id: userId,
      category,
      type,
      data: JSON.stringify(data),
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: now,
      lease_until: null,
      leased_by: null,
      last_error: null,
      sent_at: null,
      created_at: now,
      read_at: null,
      secret,
    };
  }

  /** Writes one usage (`usage.threshold`) or billing (`invoice.issued`) notification per admin, in `trx`, per their preferences. */
  async function billingNotice(trx: WriteTx, n: BillingNotice): Promise<void> {
    const category = n.type === 'usage.threshold' ? 'usage' : 'billing';
    const rows = (await deps.admins(trx, n.workspaceId)).map((u) => row(n.workspaceId, u.id, category, n.type, n.data));
    await repo.insertMany(trx, await applyPreferences(trx, rows, category));
    await deps.forward?.(trx, {
      workspaceId: n.workspaceId,
      category,
      type: n.type,
      title: notificationTitle(n.type, n.data),
      data: { ...n.data },
      at: n.data.at,
    });
  }

  /** Writes an invite or password-reset email in `trx` (the transaction that makes the link). */
  async function linkNotice(trx: WriteTx, n: LinkNotice): Promise<void> {
    await repo.insertMany(trx, [row(n.workspaceId, n.userId, 'account', n.type, n.data, n.url)]);
  }

  /**
   * Writes one security notification per recipient (the affected users, and the workspace's admins
   * when asked), in `trx` (the change's transaction, so a rolled-back change tells no one).
   */
  async function securityNotice(trx: WriteTx, n: SecurityNotice): Promise<void> {
    const ids = new Set(n.users);
    if (n.admins) for (const a of await deps.admins(trx, n.workspaceId)) ids.add(a.id);
    if (n.except) ids.delete(n.except);
    await repo.insertMany(
      trx,
      [...ids].map((id) => row(n.workspaceId, id, 'security', n.type, n.data)),
    );
    await deps.forward?.(trx, {
      workspaceId: n.workspaceId,
      category: 'security',
      type: n.type,
      title: notificationTitle(n.type, n.data),
      data: { ...n.data },
      at: n.data.at,
    });
  }

  return { endpointNotice, billingNotice, linkNotice, securityNotice };
}
