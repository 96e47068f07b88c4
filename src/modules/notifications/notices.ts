import type { NotificationCategory, NotificationsTable } from '../../db/types.js';
import { isoAt } from '../../kernel/clock.js';
import { newId } from '../../kernel/ids.js';
import type {
  BillingNotice,
  DomainEventOf,
  ForwardedNotice,
  KeyEvent,
  LinkNotice,
  MemberEvent,
  SecurityNotice,
} from '../../platform/domain-events.js';
import type { Change, Subscriber } from '../../platform/unit-of-work.js';
import { type EndpointNoticeData, notificationTitle } from './email-render.js';
import { notificationsRepository as repo } from './notifications.repository.js';
import type { NotificationsDeps } from './notifications-deps.js';
import type { Preferences } from './preferences.js';

export type { BillingNotice, LinkNotice, SecurityNotice };

/**
 * The notices (docs/notifications.md), written in the change that causes them as a subscriber of what it emits:
 * one row per recipient, per their preferences, and told to the integrations once per workspace
 * (`notification.recorded`).
 */
export function createNotices(deps: NotificationsDeps, prefs: Pick<Preferences, 'applyPreferences'>) {
  const { clock } = deps;
  const { applyPreferences } = prefs;

  /** Tells the integrations of a notification written in `c`, once per workspace. */
  const recorded = (c: Change, notice: Parameters<typeof forwardOf>[0]) =>
    c.emit({ type: 'notification.recorded', notice: forwardOf(notice) });

  /** Writes one notification per admin of the endpoint's workspace, in the outcome's change. */
  async function endpointNotice(c: Change, notice: DomainEventOf<'endpoint.health'>): Promise<void> {
    const { trx } = c;
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
    const type = `endpoint.${notice.kind}` as NotificationsTable['type'];
    await recorded(c, { workspaceId: w.workspace_id, category: 'webhooks', type, data, at: notice.at });
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

  /** Writes one usage (`usage.threshold`) or billing (`invoice.issued`) notification per admin, in `c`, per their preferences. */
  async function billingNotice(c: Change, n: BillingNotice): Promise<void> {
    const { trx } = c;
    const category = n.type === 'usage.threshold' ? 'usage' : 'billing';
    const rows = (await deps.admins(trx, n.workspaceId)).map((u) => row(n.workspaceId, u.id, category, n.type, n.data));
    await repo.insertMany(trx, await applyPreferences(trx, rows, category));
    await recorded(c, { workspaceId: n.workspaceId, category, type: n.type, data: n.data, at: n.data.at });
  }

  /** Writes an invite or password-reset email in `c` (the change that makes the link). */
  async function linkNotice(c: Change, n: LinkNotice): Promise<void> {
    await repo.insertMany(c.trx, [row(n.workspaceId, n.userId, 'account', n.type, n.data, n.url)]);
  }

  /**
   * Writes one security notification per recipient (the affected users, and the workspace's admins
   * when asked), in `c` (so a rolled-back change tells no one).
   */
  async function securityNotice(c: Change, n: SecurityNotice): Promise<void> {
    const { trx } = c;
    const ids = new Set(n.users);
    if (n.admins) for (const a of await deps.admins(trx, n.workspaceId)) ids.add(a.id);
    if (n.except) ids.delete(n.except);
    await repo.insertMany(
      trx,
      [...ids].map((id) => row(n.workspaceId, id, 'security', n.type, n.data)),
    );
    await recorded(c, { workspaceId: n.workspaceId, category: 'security', type: n.type, data: n.data, at: n.data.at });
  }

  /** A key's change tells its owner (while a member) and the workspace's admins. */
  async function keyNotice(c: Change, e: KeyEvent): Promise<void> {
    const { key } = e;
    const owner = await deps.userRow(c.trx, key.user_id);
    await securityNotice(c, {
      type: e.type,
      workspaceId: key.workspace_id,
      users: owner && !owner.removed_at ? [owner.id] : [],
      admins: true,
      data: {
        at: e.at,
        key: { id: key.id, name: key.name, env: key.env, prefix: key.prefix, owner_email: owner?.email ?? null },
        ...(e.successorId ? { successor_id: e.successorId } : {}),
        ...(e.oldExpiresAt ? { old_expires_at: e.oldExpiresAt } : {}),
        ...(e.expiresAt ? { expires_at: e.expiresAt } : {}),
      },
    });
  }

  /**
   * A member's change tells the workspace's admins (a new member is not told of their own addition: they get the
   * invite; a removed one is no longer an admin), and the member of their own new role.
   */
  async function memberNotice(c: Change, e: MemberEvent): Promise<void> {
    const m = e.member;
    if (e.first || (e.type === 'member.role_changed' && e.previousRole === m.role)) return;
    const member = { id: m.id, email: m.email, role: m.role };
    await securityNotice(c, {
      type: e.type,
      workspaceId: m.workspace_id,
      users: e.type === 'member.role_changed' ? [m.id] : [],
      admins: true,
      ...(e.type === 'member.added' ? { except: m.id } : {}),
      data: {
        at: e.at,
        member: e.type === 'member.role_changed' ? { ...member, previous_role: e.previousRole } : member,
      },
    });
  }

  /** Notifications as a subscriber of changes (registered in src/services.ts). */
  const subscriber: Subscriber = {
    name: 'notifications',
    on: {
      'security.notice': (c, e) => securityNotice(c, e.notice),
      'key.created': keyNotice,
      'key.revoked': keyNotice,
      'key.rolled': keyNotice,
      'key.expiring': keyNotice,
      'member.added': memberNotice,
      'member.removed': memberNotice,
      'member.role_changed': memberNotice,
      'endpoint.health': endpointNotice,
      'billing.notice': (c, e) => billingNotice(c, e.notice),
      'link.issued': (c, e) => linkNotice(c, e.notice),
    },
  };

  return { subscriber };
}

/** A notification as the integrations get it: once per workspace, with its one-line title. */
function forwardOf(n: {
  workspaceId: string;
  category: string;
  type: NotificationsTable['type'];
  data: object;
  at: string;
}): ForwardedNotice {
  return {
    workspaceId: n.workspaceId,
    category: n.category,
    type: n.type,
    title: notificationTitle(n.type, n.data as never),
    data: { ...n.data },
    at: n.at,
  };
}
