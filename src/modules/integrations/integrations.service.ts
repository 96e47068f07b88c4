import { readJson } from '../../db/dialect.js';
import type { Env, IntegrationMessagesTable, IntegrationsTable } from '../../db/types.js';
import type { AuditTrail } from '../../kernel/audit-actions.js';
import { isoAt } from '../../kernel/clock.js';
import { ForbiddenError, fieldError, NotFoundError } from '../../kernel/errors.js';
import { isResourceEventType } from '../../kernel/event-types.js';
import { newId } from '../../kernel/ids.js';
import type { Platform } from '../../kernel/platforms.js';
import type { Principal } from '../../kernel/principal.js';
import { checkWebhookUrl } from '../../lib/url-guard.js';
import type { Change, Subscriber, Unit } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import { testMessage } from './chat-render.js';
import { createChatSender, type IntegrationsDeps } from './chat-sender.js';
import { integrationsRepository as repo, urlAt, urlSealedColumn } from './integrations.repository.js';

export type { ForwardedNotification, IntegrationsDeps } from './chat-sender.js';
export { MAX_ATTEMPTS, MESSAGE_RETENTION_MS, nextAttemptDelay, RETRY_BASE_MS, RETRY_FACTOR } from './chat-sender.js';

/** An integration as the API shows it: the URL only as its host and last 4 characters. */
export interface IntegrationView {
  id: string;
  kind: Platform;
  url_hint: string;
  env: Env;
  events: string[];
  categories: string[];
  status: 'enabled' | 'disabled';
  created_at: string;
  updated_at: string;
}

/** One entry of an integration's message log. */
export interface IntegrationMessageView {
  id: string;
  source: string;
  type: string;
  status: IntegrationMessagesTable['status'];
  attempt_count: number;
  next_attempt_at: string | null;
  last_response_status: number | null;
  last_response_excerpt: string | null;
  last_error: string | null;
  sent_at: string | null;
  created_at: string;
  /** The JSON body sent (Block Kit or embed). */
  payload: unknown;
}

/** The platform rule (docs/integrations.md#urls): the webhook host and path of each platform, over https. */
export function platformRule(kind: Platform, url: string): string | null {
  const rule =
    kind === 'slack'
      ? 'a Slack incoming webhook URL must be https://hooks.slack.com/services/…'
      : 'a Discord webhook URL must be https://discord.com/api/webhooks/… (or discordapp.com)';
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return rule;
  }
  if (u.protocol !== 'https:' || u.port !== '' || u.username !== '' || u.password !== '') return rule;
  if (kind === 'slack') return u.hostname === 'hooks.slack.com' && /^\/services\/.+/.test(u.pathname) ? null : rule;
  return (u.hostname === 'discord.com' || u.hostname === 'discordapp.com') && /^\/api\/webhooks\/.+/.test(u.pathname)
    ? null
    : rule;
}

/** Host and the last 4 characters: enough to recognise a URL, never enough to use it. */
export function urlHint(url: string): string {
  let host = '';
  try {
    host = new URL(url).hostname;
  } catch {}
  return `${host} …${url.slice(-4)}`;
}

/**
 * Slack and Discord integrations (docs/integrations.md): an admin's destinations for a workspace's resource
 * events (of one environment) and notification categories. Messages are written in the change that causes
 * them (`subscriber`: an event the outbox recorded, a notification written) and sent by the `integrations` job
 * (`sendDue`), leased, retried with back-off, a 429's Retry-After honoured, through the delivery engine's
 * sender (docs/api.md#webhook-urls, checked on the address dialled).
 */
export function createIntegrationsService(deps: IntegrationsDeps) {
  const { db, clock } = deps;
  // Messages: written in the transaction of their cause, sent by the `integrations` job (chat-sender.ts).
  const { message, onEvent, forward, ...sender } = createChatSender(deps);

  /** Integrations as a subscriber of changes (registered in src/services.ts). */
  const subscriber: Subscriber = {
    name: 'integrations',
    on: {
      // Resource events only: what happens to the workspace itself reaches chats as notifications.
      'event.recorded': async (c, e) => {
        if (isResourceEventType(e.event.type)) await onEvent(c, e.event, e.receivers);
      },
      'notification.recorded': (c, e) => forward(c, e.notice),
    },
  };

  /** Every change to an integration changes the workspace's receivers: no process keeps using those it cached. */
  const receiversChanged = (c: Change, workspaceId: string) => c.emit({ type: 'receivers.changed', workspaceId });

  function admin(p: Principal): void {
    if (p.role !== 'admin') throw new ForbiddenError('Only workspace admins can manage integrations.');
  }

  function view(r: IntegrationsTable): IntegrationView {
    return {
      id: r.id,
      kind: r.kind,
      url_hint: urlHint(deps.sealer.open(r.url, urlAt(r.workspace_id, r.id))),
      env: r.env,
      events: readJson<string[]>(r.events),
      categories: readJson<string[]>(r.categories),
      status: r.status,
      created_at: r.created_at,
      updated_at: r.updated_at,
    };
  }

  function messageView(m: IntegrationMessagesTable): IntegrationMessageView {
    return {
      id: m.id,
      source: m.source,
      type: m.type,
      status: m.status,
      attempt_count: m.attempt_count,
      next_attempt_at: m.next_attempt_at,
      last_response_status: m.last_response_status,
      last_response_excerpt: m.last_response_excerpt,
      last_error: m.last_error,
      sent_at: m.sent_at,
      created_at: m.created_at,
      payload: JSON.parse(m.payload),
    };
  }

  function nothingForwarded(events: string[], categories: string[]): void {
    if (events.length === 0 && categories.length === 0) {
      throw fieldError('events', 'nothing_forwarded', 'choose at least one event type or notification category');
    }
  }

  /** What an entry shows of an integration: its webhook URL (a secret of Slack's and Discord's) only as "[redacted]". */
  const shown = (r: IntegrationsTable | null) =>
    r && {
      kind: r.kind,
      url: r.url,
      env: r.env,
      events: readJson<string[]>(r.events),
      categories: readJson<string[]>(r.categories),
      status: r.status,
    };

  /** `integration.created|updated|deleted` with the fields that changed (an update that changed none: no entry). */
  function record(
    audit: AuditTrail,
    action: 'integration.created' | 'integration.updated' | 'integration.deleted',
    before: IntegrationsTable | null,
    after: IntegrationsTable | null,
  ) {
    const row = (after ?? before) as IntegrationsTable;
    const changes = changesOf(shown(before), shown(after), { redact: ['url'] });
    if (action === 'integration.updated' && Object.keys(changes).length === 0) return;
    audit.record({
      action,
      workspaceId: row.workspace_id,
      target: { type: 'integration', id: row.id },
      env: row.env,
      changes,
    });
  }

  async function get(p: Principal, id: string): Promise<IntegrationsTable> {
    const row = await repo.find(db, p.workspaceId, id);
    if (!row) throw new NotFoundError('integration');
    return row;
  }

  async function list(p: Principal): Promise<IntegrationView[]> {
    admin(p);
    return (await repo.list(db, p.workspaceId)).map(view);
  }

  async function create(
    u: Unit<Principal>,
    input: { kind: Platform; url: string; env: Env; events: string[]; categories: string[] },
  ): Promise<IntegrationView> {
    const p = u.actor;
    admin(p);
    const rule = platformRule(input.kind, input.url);
    if (rule) throw fieldError('url', 'not_platform_webhook', rule);
    const checked = await checkWebhookUrl(input.url, { ...deps.urlGuard, allowInsecure: false });
    if (!checked.ok) throw fieldError('url', checked.issue, checked.message);
    nothingForwarded(input.events, input.categories);
    const now = isoAt(clock.now());
    const id = newId('integration');
    const row: IntegrationsTable = {
      id,
      workspace_id: p.workspaceId,
      kind: input.kind,
      url: deps.sealer.seal(input.url, urlAt(p.workspaceId, id)),
      env: input.env,
      events: JSON.stringify(input.events),
      categories: JSON.stringify(input.categories),
      status: 'enabled',
      created_at: now,
      updated_at: now,
    };
    await u.run(async (c) => {
      await repo.insert(c.trx, row);
      await receiversChanged(c, row.workspace_id);
      record(c.audit, 'integration.created', null, row);
    });
    return view(row);
  }

  async function update(
    u: Unit<Principal>,
    id: string,
    input: { env?: Env; events?: string[]; categories?: string[]; status?: 'enabled' | 'disabled' },
  ): Promise<IntegrationView> {
    const p = u.actor;
    admin(p);
    return u.run(async (c) => {
      const { trx, audit } = c;
      const row = await repo.find(trx, p.workspaceId, id);
      if (!row) throw new NotFoundError('integration');
      const next: IntegrationsTable = {
        ...row,
        ...(input.env ? { env: input.env } : {}),
        ...(input.events ? { events: JSON.stringify(input.events) } : {}),
        ...(input.categories ? { categories: JSON.stringify(input.categories) } : {}),
        ...(input.status ? { status: input.status } : {}),
        updated_at: isoAt(clock.now()),
      };
      nothingForwarded(readJson<string[]>(next.events), readJson<string[]>(next.categories));
      await repo.update(trx, id, next);
      await receiversChanged(c, row.workspace_id);
      record(audit, 'integration.updated', row, next);
      return view(next);
    });
  }

  async function remove(u: Unit<Principal>, id: string): Promise<void> {
    const p = u.actor;
    admin(p);
    await u.run(async (c) => {
      const { trx, audit } = c;
      const row = await repo.find(trx, p.workspaceId, id);
      if (!row) throw new NotFoundError('integration');
      await repo.remove(trx, id);
      await receiversChanged(c, row.workspace_id);
      record(audit, 'integration.deleted', row, null);
    });
  }

  /** Queues a test message to the integration (enabled or not) and returns it. */
  async function test(u: Unit<Principal>, id: string): Promise<IntegrationMessageView> {
    const p = u.actor;
    admin(p);
    const row = await get(p, id);
    const now = clock.now();
    const m = message(row, 'test', 'test', testMessage(isoAt(now)), now);
    await u.run(async ({ trx }) => {
      await repo.insertMessages(trx, [m]);
    });
    return messageView(m);
  }

  async function messages(p: Principal, id: string, limit: number): Promise<IntegrationMessageView[]> {
    admin(p);
    await get(p, id);
    return (await repo.messages(db, id, limit)).map(messageView);
  }

  /** The secrets it keeps sealed at rest (src/platform/sealed-columns.ts). */
  const sealedColumns = [urlSealedColumn];

  return { subscriber, list, create, update, remove, test, messages, sealedColumns, ...sender };
}
export type IntegrationsService = ReturnType<typeof createIntegrationsService>;
