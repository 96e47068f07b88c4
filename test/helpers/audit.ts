import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import type { AuditEntry } from '../../src/modules/audit/audit.schemas.js';
import { toAuditEntry } from '../../src/modules/audit/audit.service.js';
import type { TestApp } from './app.js';

/** Every audit entry of a workspace, oldest first, as the API shows them (read from the table itself). */
export async function allEntriesOf(t: TestApp, workspaceId: string): Promise<AuditEntry[]> {
  const rows = await t.storage.db
    .selectFrom('audit_entries')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('seq')
    .execute();
  return rows.map(toAuditEntry);
}

/**
 * The entries of the changes made in a workspace since it was created, oldest first: every entry but its first,
 * which must be its own `workspace.created` (seq 1).
 */
export async function entriesOf(t: TestApp, workspaceId: string): Promise<AuditEntry[]> {
  const [created, ...rest] = await allEntriesOf(t, workspaceId);
  expect({ seq: created?.seq, action: created?.action, target: created?.target.id }).toEqual({
    seq: 1,
    action: 'workspace.created',
    target: workspaceId,
  });
  return rest;
}

/** The entries a step added: those after the `before` count. */
export async function newEntries(t: TestApp, workspaceId: string, before: number): Promise<AuditEntry[]> {
  return (await entriesOf(t, workspaceId)).slice(before);
}

/** The id of an API key from its plaintext. */
export async function keyIdOf(t: TestApp, key: string): Promise<string> {
  const digest = createHash('sha256').update(key).digest('hex');
  const row = await t.storage.db
    .selectFrom('api_keys')
    .select('id')
    .where('digest', '=', digest)
    .executeTakeFirstOrThrow();
  return row.id;
}
