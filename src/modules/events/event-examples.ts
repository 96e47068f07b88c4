import { isoAt } from '../../kernel/clock.js';
import { type AnyEventType, TEST_EVENT_TYPE } from '../../kernel/event-types.js';
import { newId } from '../../kernel/ids.js';
import type { EventDataOf } from './events.schemas.js';

/** What an example event is about: the endpoint it is sent to, its workspace, and when. */
export interface ExampleContext {
  workspaceId: string;
  webhookId: string;
  now: number;
}

/** The `data` of any event type (the catalogue's union of them). */
export type AnyEventData = EventDataOf<AnyEventType>;

/**
 * The `data` of a test event of `type` (docs/api.md#test-events): for `webhook.test` the message it
 * has always had; for a catalogue type, the shape a real event of that type has, about an example
 * (a resource: a fresh `res_` id that names no real resource, name "Example resource", metadata
 * `example: "true"`; a key, member, invoice…: fresh ids that name nothing real).
 */
export function exampleEventData<T extends AnyEventType>(type: T, ctx: ExampleContext): EventDataOf<T> {
  return examples(type, ctx) as EventDataOf<T>;
}

function examples(type: AnyEventType, ctx: ExampleContext): AnyEventData {
  const at = isoAt(ctx.now);
  const before = isoAt(ctx.now - 60_000);
  const id = newId('resource', ctx.now);
  const resource = {
    id,
    name: 'Example resource',
    type: 'standard',
    status: type === 'resource.status_changed' ? 'archived' : 'active',
    metadata: { example: 'true' },
    workspace_id: ctx.workspaceId,
    created_at: before,
    updated_at: type === 'resource.created' ? before : at,
  };
  const key = {
    id: newId('key', ctx.now),
    name: 'Example key',
    env: 'live' as const,
    scopes: ['resources:read'],
    user_id: newId('user', ctx.now),
    created_by: null,
    created_at: before,
    expires_at: type === 'key.expiring' || type === 'key.rolled' ? isoAt(ctx.now + 7 * 86_400_000) : null,
    revoked_at: type === 'key.revoked' ? at : null,
  };
  const member = {
    id: newId('user', ctx.now),
    email: 'member@example.com',
    name: 'Example member',
    role: 'member' as const,
  };
  const usage = {
    billable_requests: 1000,
    included_requests: 1000,
    plan: 'free',
    period_start: isoAt(ctx.now - 86_400_000),
    period_end: isoAt(ctx.now + 29 * 86_400_000),
  };
  const invoice = {
    invoice_id: newId('invoice', ctx.now),
    number: 'INV-1',
    plan: 'pro',
    total_cents: 4900,
    currency: 'usd',
    period_start: isoAt(ctx.now - 30 * 86_400_000),
    period_end: before,
  };
  const webhook = { webhook_id: ctx.webhookId, label: 'Example endpoint', env: 'live' as const };
  switch (type) {
    case TEST_EVENT_TYPE:
      return { webhook_id: ctx.webhookId, message: 'This is a test event sent from the API.' };
    case 'resource.created':
      return { resource_id: id, resource: { ...resource, created_at: at, updated_at: at } };
    case 'resource.updated':
      return { resource_id: id, resource, previous_attributes: { name: 'Example resource (before)' } };
    case 'resource.status_changed':
      return { resource_id: id, previous_status: 'active', current_status: 'archived' };
    case 'resource.deleted':
      return { resource_id: id };
    case 'key.created':
    case 'key.revoked':
      return { key };
    case 'key.rolled':
      return { key, successor_id: newId('key', ctx.now + 1), old_expires_at: key.expires_at ?? at };
    case 'key.expiring':
      return { key, expires_at: key.expires_at ?? at };
    case 'member.invited':
    case 'member.joined':
    case 'member.removed':
      return { member };
    case 'member.role_changed':
      return { member, previous_role: 'viewer' };
    case 'webhook.disabled':
      return { ...webhook, reason: 'failing' };
    case 'webhook.enabled':
      return webhook;
    case 'delivery.exhausted':
      return {
        delivery_id: newId('delivery', ctx.now),
        event_id: newId('event', ctx.now),
        event_type: 'resource.created',
        webhook_id: ctx.webhookId,
        attempts: 8,
        last_response_status: 500,
      };
    case 'usage.threshold':
      return { threshold: 100, ...usage };
    case 'usage.cap_reached':
      return usage;
    case 'invoice.finalized':
      return invoice;
    case 'invoice.payment_succeeded':
      return { ...invoice, paid_at: at };
    case 'invoice.payment_failed':
      return { ...invoice, failed_at: at };
    case 'workspace.deletion_scheduled':
      return { workspace_id: ctx.workspaceId, delete_at: isoAt(ctx.now + 30 * 86_400_000) };
    case 'workspace.deletion_cancelled':
      return { workspace_id: ctx.workspaceId };
    case 'export.ready':
      return { export_id: 'exp_01JD3K8Z6W6J9Q4X1V5N2M7P8R', expires_at: isoAt(ctx.now + 86_400_000) };
  }
}
