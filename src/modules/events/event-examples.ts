import { isoAt } from '../../kernel/clock.js';
import { type AnyEventType, TEST_EVENT_TYPE } from '../../kernel/event-types.js';
import { newId } from '../../kernel/ids.js';
import type { Event } from './events.schemas.js';

/** What an example event is about: the endpoint it is sent to, its workspace, and when. */
export interface ExampleContext {
  workspaceId: string;
  webhookId: string;
  now: number;
}

/**
 * The `data` of a test event of `type` (docs/api.md#test-events): for `webhook.test` the message it
 * has always had; for a catalogue type, the shape a real event of that type has, about an example
 * resource (a fresh `res_` id that names no real resource, name "Example resource", metadata
 * `example: "true"`).
 */
export function exampleEventData(type: AnyEventType, ctx: ExampleContext): Event['data'] {
  if (type === TEST_EVENT_TYPE)
    return { webhook_id: ctx.webhookId, message: 'This is a test event sent from the API.' };
  const id = newId('resource', ctx.now);
  const at = isoAt(ctx.now);
  const resource = {
    id,
    name: 'Example resource',
    type: 'standard',
    status: type === 'resource.status_changed' ? 'archived' : 'active',
    metadata: { example: 'true' },
    workspace_id: ctx.workspaceId,
    created_at: isoAt(ctx.now - 60_000),
    updated_at: type === 'resource.created' ? isoAt(ctx.now - 60_000) : at,
  };
  switch (type) {
    case 'resource.created':
      return { resource_id: id, resource: { ...resource, created_at: at, updated_at: at } };
    case 'resource.updated':
      return { resource_id: id, resource, previous_attributes: { name: 'Example resource (before)' } };
    case 'resource.status_changed':
      return { resource_id: id, previous_status: 'active', current_status: 'archived' };
    case 'resource.deleted':
      return { resource_id: id };
  }
}
