import { createHash } from 'node:crypto';
import type { AuditEntriesTable } from '../../db/types.js';
import { canonicalJson } from '../../lib/canonical-json.js';

/** An entry's fields as the chain hashes them: every column but `hash`, `changes` as a JSON value. */
function hashed(e: Omit<AuditEntriesTable, 'hash'>) {
  return {
    id: e.id,
    workspace_id: e.workspace_id,
    seq: Number(e.seq),
    time: e.time,
    actor_type: e.actor_type,
    actor_id: e.actor_id,
    actor_name: e.actor_name,
    actor_user_id: e.actor_user_id,
    action: e.action,
    target_type: e.target_type,
    target_id: e.target_id,
    env: e.env,
    changes: JSON.parse(e.changes) as unknown,
    request_id: e.request_id,
    ip: e.ip,
    user_agent: e.user_agent,
  };
}

/** docs/api.md#audit-log: SHA-256 hex of the previous entry's hash followed by the canonical JSON of this one. */
export function entryHash(prevHash: string, entry: Omit<AuditEntriesTable, 'hash'>): string {
  return createHash('sha256')
    .update(prevHash + canonicalJson(hashed(entry)))
    .digest('hex');
}
