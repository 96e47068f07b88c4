import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Storage } from '../../src/db/database.js';

/** An audit entry as stored (audit_entries), its changes parsed. */
export interface StoredEntry {
  id: string;
  workspace_id: string;
  seq: number;
  time: string;
  actor_type: string;
  actor_id: string;
  actor_name: string;
  actor_user_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  env: string | null;
  changes: Record<string, { before: unknown; after: unknown }>;
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
  hash: string;
}

/** Every entry of a workspace (or of every workspace), oldest first, read with SQL (not through the service under test). */
export async function storedEntries(t: { storage: Storage }, workspaceId?: string): Promise<StoredEntry[]> {
  const where = workspaceId ? sql`where workspace_id = ${workspaceId}` : sql``;
  const { rows } = await sql<
    Record<string, unknown>
  >`select * from audit_entries ${where} order by workspace_id, seq`.execute(t.storage.db);
  return rows.map((r) => ({
    ...(r as unknown as StoredEntry),
    seq: Number(r.seq),
    changes: r.changes ? (JSON.parse(String(r.changes)) as StoredEntry['changes']) : {},
  }));
}

/**
 * Runs `change`, then returns the entries it added to the workspace (by seq). `workspaceId` null: the entries it added
 * to any workspace.
 */
export async function entriesOf(
  t: { storage: Storage },
  workspaceId: string | null,
  change: () => Promise<unknown>,
): Promise<StoredEntry[]> {
  const before = new Set((await storedEntries(t, workspaceId ?? undefined)).map((e) => e.id));
  await change();
  return (await storedEntries(t, workspaceId ?? undefined)).filter((e) => !before.has(e.id));
}

/** Exactly one entry, with this action; returns it. */
export function onlyEntry(entries: StoredEntry[], action: string): StoredEntry {
  expect(
    entries.map((e) => e.action),
    JSON.stringify(entries, null, 1),
  ).toEqual([action]);
  return entries[0] as StoredEntry;
}
