import { randomBytes } from 'node:crypto';
import { type Db, readJson } from '../../db/dialect.js';
import { createLeasedOutbox } from '../../db/leased-outbox.js';
import type { EventsTable, IntegrationMessagesTable, IntegrationsTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { newId } from '../../kernel/ids.js';
import type { SystemActor } from '../../kernel/principal.js';
import type { Send } from '../../lib/http-send.js';
import { purgeInBatches } from '../../platform/batched-purge.js';
import type { ForwardedNotice } from '../../platform/domain-events.js';
import type { Change, Unit, WriteTx } from '../../platform/unit-of-work.js';

/** A workspace's receivers' token as the events module hands it (its `receiver_versions` row), or null. */
type ReceiversVersion = string | null;

import type { Sealer } from '../../lib/sealed.js';
import type { UrlGuardOptions } from '../../lib/url-guard.js';
import { eventMessage, type IntegrationMessage, notificationMessage, renderChatMessage } from './chat-render.js';
import { integrationsRepository as repo, urlAt } from './integrations.repository.js';

/** What the integrations service is given (src/services.ts). */
export interface IntegrationsDeps {
  db: Db;
  clock: Clock;
  urlGuard: UrlGuardOptions;
  send: Send;
  /** The sender's timeout (WEBHOOK_TIMEOUT_MS): a lease outlasts one attempt and the write of its outcome. */
  timeoutMs: number;
  /** Seals the Slack and Discord URLs at rest (src/lib/sealed.ts); a URL is opened to send and for its hint. */
  sealer: Sealer;
}

/** A notification to forward, told once per workspace by the notifications module (not per recipient). */
export type ForwardedNotification = ForwardedNotice;

/** Attempts per message: the first and 5 retries (docs/integrations.md#sending). */
export const MAX_ATTEMPTS = 6;
/** Back-off between attempts: 30 s × 4^(n-1): 30 s, 2 min, 8 min, 32 min, 2 h 8 min. */
export const RETRY_BASE_MS = 30_000;
export const RETRY_FACTOR = 4;
/** Statuses that will not get better by retrying (a revoked or mistyped webhook): no retry. */
const FINAL_STATUSES = new Set([400, 401, 403, 404, 410]);
const CLAIM_BATCH = 20;
/** How long the message log keeps a finished message (docs/integrations.md#the-message-log). */
export const MESSAGE_RETENTION_MS = 30 * 24 * 3_600_000;
const EXCERPT = 300;

/**
 * Delay before the next attempt after a failed one (`attemptsMade` counts it), or null to give up:
 * a 429's Retry-After header (seconds or an HTTP date) is honoured as given, else the `retry_after` of
 * its JSON body (Discord: seconds, a float); otherwise exponential back-off.
 */
export function nextAttemptDelay(
  attemptsMade: number,
  status: number | null,
  retryAfter: string | null | undefined,
  nowMs: number,
  body?: string | null,
): number | null {
  if (attemptsMade >= MAX_ATTEMPTS) return null;
  if (status !== null && FINAL_STATUSES.has(status)) return null;
  const backoff = RETRY_BASE_MS * RETRY_FACTOR ** (attemptsMade - 1);
  if (status === 429 && retryAfter) {
    const v = retryAfter.trim();
    if (/^\d+(\.\d+)?$/.test(v)) return Math.ceil(Number(v) * 1000);
    const at = Date.parse(v);
    if (!Number.isNaN(at)) return Math.max(0, at - nowMs);
  }
  if (status === 429 && body) {
    const seconds = retryAfterInBody(body);
    if (seconds !== undefined) return Math.ceil(seconds * 1000);
  }
  return backoff;
}

/** The `retry_after` (seconds, ≥ 0, at most a day) of a 429's JSON body (Discord's rate-limit response), if any. */
function retryAfterInBody(body: string): number | undefined {
  try {
    const v = (JSON.parse(body) as { retry_after?: unknown }).retry_after;
    return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 86_400 ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The messages of the integrations (docs/integrations.md#sending): written in the transaction of their
 * cause (`onEvent`, when the outbox has recorded an event; `forward`, when a notification was written) and sent by the
 * `integrations` job (`sendDue`), leased, retried with back-off, a 429's Retry-After honoured, through
 * the delivery engine's sender.
 */
export function createChatSender(deps: IntegrationsDeps) {
  const { clock } = deps;
  const leaseMs = Math.max(60_000, 2 * deps.timeoutMs + 1000);
  const workerId = `intw_${randomBytes(8).toString('hex')}`;

  function message(
    i: IntegrationsTable,
    source: string,
    type: string,
    m: IntegrationMessage,
    now: number,
  ): IntegrationMessagesTable {
    const at = isoAt(now);
    return {
      id: newId('integrationMessage', now),
      integration_id: i.id,
      workspace_id: i.workspace_id,
      source,
      type,
      payload: JSON.stringify(renderChatMessage(i.kind, m)),
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: at,
      lease_until: null,
      leased_by: null,
      last_response_status: null,
      last_response_excerpt: null,
      last_error: null,
      sent_at: null,
      created_at: at,
    };
  }

  // Performance (docs/performance.md, "The receivers of an event, cached"): a workspace's enabled integrations
  // as read under its receivers' token, which every change to them replaces in its own transaction
  // (`receiversChanged`) and every event's insert reads: an entry is used only while no change has committed.
  const enabled = new Map<string, { version: ReceiversVersion; rows: IntegrationsTable[] }>();
  const MAX_CACHED = 10_000;

  async function enabledOf(trx: WriteTx, workspaceId: string, version: ReceiversVersion | undefined) {
    const cached = enabled.get(workspaceId);
    if (version !== undefined && cached?.version === version) return cached.rows;
    // Read after the token (a later statement of the event's transaction): never older than the token says.
    const rows = await repo.enabledOf(trx, workspaceId);
    if (version === undefined) return rows;
    if (enabled.size >= MAX_CACHED) enabled.clear();
    enabled.set(workspaceId, { version, rows });
    return rows;
  }

  /**
   * A resource event the outbox recorded (`event.recorded`), in its change, to the integrations that chose it.
   * `receivers`: the workspace's receivers' token read by the event's insert (undefined: read them).
   */
  async function onEvent({ trx }: Change, event: EventsTable, receivers?: ReceiversVersion): Promise<void> {
    const targets = (await enabledOf(trx, event.workspace_id, receivers)).filter((i) => {
      const events = readJson<string[]>(i.events);
      return i.env === event.env && (events.includes('*') || events.includes(event.type));
    });
    if (targets.length === 0) return;
    const now = clock.now();
    const m = eventMessage(event.payload, event.env);
    await repo.insertMessages(
      trx,
      targets.map((i) => message(i, 'event', event.type, m, now)),
    );
  }

  /** A notification the notifications module wrote (`notification.recorded`), once per workspace, in its change. */
  async function forward({ trx }: Change, n: ForwardedNotification): Promise<void> {
    const targets = (await repo.enabledOf(trx, n.workspaceId)).filter((i) =>
      readJson<string[]>(i.categories).includes(n.category),
    );
    if (targets.length === 0) return;
    const now = clock.now();
    const m = notificationMessage(n);
    await repo.insertMessages(
      trx,
      targets.map((i) => message(i, 'notification', n.type, m, now)),
    );
  }

  /**
   * The `purge-integration-messages` job: finished messages older than 30 days, in batches with one
   * `integration_messages.purged` entry per workspace (docs/settings.md#retention); returns how many.
   */
  function purgeExpired(u: Unit<SystemActor>): Promise<number> {
    const cutoff = isoAt(clock.now() - MESSAGE_RETENTION_MS);
    return purgeInBatches(u, {
      action: 'integration_messages.purged',
      target: 'integration_messages',
      steps: [{ name: 'messages', run: (trx, limit) => repo.purgeBefore(trx, cutoff, limit) }],
    });
  }

  // The lease and drain loop shared with the notification outbox (db/leased-outbox.ts); a batch is sent at once.
  const outbox = createLeasedOutbox({
    clock,
    leaseMs,
    batch: CLAIM_BATCH,
    concurrent: true,
    claim: (u: Unit, lease) => u.run(({ trx }) => repo.claim(trx, { ...lease, workerId })),
    sendOne: (u, m) => sendOne(u, m),
  });
  /** Sends every due message, writing with `u` (the `integrations` job's); returns how many were sent. */
  const sendDue = (u: Unit) => outbox.sendDue(u);

  async function sendOne(
    u: Unit,
    m: IntegrationMessagesTable & { url: string; integration_status: string },
  ): Promise<boolean> {
    const none = { last_response_status: null, last_response_excerpt: null, sent_at: null };
    if (m.integration_status !== 'enabled' && m.source !== 'test') {
      const cancelled = { status: 'cancelled', next_attempt_at: null, last_error: 'integration disabled' } as const;
      await u.run(({ trx }) => repo.finish(trx, m.id, workerId, { ...none, ...cancelled, attempted: false }));
      return false;
    }
    const r = await deps.send(
      deps.sealer.open(m.url, urlAt(m.workspace_id, m.integration_id)),
      { 'content-type': 'application/json', 'user-agent': 'WorkspaceService-Integrations/1' },
      m.payload,
    );
    const now = clock.now();
    const attempts = m.attempt_count + 1;
    const response = {
      last_response_status: r.status,
      last_response_excerpt: r.body === null ? null : r.body.slice(0, EXCERPT),
    };
    if (r.ok) {
      const ok = { status: 'sent', next_attempt_at: null, last_error: null, sent_at: isoAt(now) } as const;
      return u.run(({ trx }) => repo.finish(trx, m.id, workerId, { ...response, ...ok, attempted: true }));
    }
    const delay = nextAttemptDelay(attempts, r.status, r.retryAfter, now, r.body);
    await u.run(({ trx }) =>
      repo.finish(trx, m.id, workerId, {
        ...response,
        status: delay === null ? 'failed' : 'pending',
        next_attempt_at: delay === null ? null : isoAt(now + delay),
        last_error: r.error,
        sent_at: null,
        attempted: true,
      }),
    );
    return false;
  }

  return { message, onEvent, forward, sendDue, purgeExpired };
}
