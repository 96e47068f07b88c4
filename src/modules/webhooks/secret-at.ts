import type { SealedAt } from '../../lib/sealed.js';

/** Where a webhook's signing secret is sealed: its workspace, its row, its column (src/lib/sealed.ts). */
export function secretAt(workspaceId: string, webhookId: string, column: 'secret' | 'previous_secret'): SealedAt {
  return { column: `webhooks.${column}`, scope: workspaceId, row: webhookId };
}
