import { createHash } from 'node:crypto';
import type { AuditEntriesTable } from '../../db/types.js';
import { canonicalJson } from '../../lib/canonical-json.js';

type Unhashed = Omit<AuditEntriesTable, 'hash'>;
const j = (v: string | null) => (v === null ? 'null' : JSON.stringify(v));

/**
 * The canonical JSON of an entry as the chain hashes it: every column but `hash`, keys sorted, `seq` a
 * number and `changes` the JSON value (given as its canonical text). Written out key by key: it is
 * `canonicalJson` of that object (src/modules/audit/audit-chain.test.ts holds them equal), without
 * sorting keys on every write.
 */
export function canonicalEntry(e: Unhashed, changesText: string): string {
  return (
    `{"action":${j(e.action)},"actor_id":${j(e.actor_id)},"actor_name":${j(e.actor_name)},` +
    `"actor_type":${j(e.actor_type)},"actor_user_id":${j(e.actor_user_id)},"changes":${changesText},` +
    `"env":${j(e.env)},"id":${j(e.id)},"ip":${j(e.ip)},"request_id":${j(e.request_id)},` +
    `"seq":${JSON.stringify(Number(e.seq))},"target_id":${j(e.target_id)},"target_type":${j(e.target_type)},` +
    `"time":${j(e.time)},"user_agent":${j(e.user_agent)},"workspace_id":${j(e.workspace_id)}}`
  );
}

/**
 * docs/api.md#audit-log: SHA-256 hex of the previous entry's hash followed by the canonical JSON of this one.
 * `changesText`: the canonical text of `entry.changes` where the caller has it (the append stores that text).
 */
export function entryHash(prevHash: string, entry: Unhashed, changesText?: string): string {
  const changes = changesText ?? canonicalJson(JSON.parse(entry.changes) as unknown);
  return createHash('sha256')
    .update(prevHash + canonicalEntry(entry, changes))
    .digest('hex');
}

/**
 * Numbers a workspace's new entries after its head (seq, hash) and chains them; returns them with the head
 * they leave. `changes` of each is its canonical text (the append stores that).
 */
export function numberAfter(
  head: { seq: number; hash: string },
  entries: readonly Omit<Unhashed, 'seq'>[],
): { rows: AuditEntriesTable[]; head: { seq: number; hash: string } } {
  let { seq, hash } = head;
  const rows = entries.map((entry) => {
    seq += 1;
    const numbered: Unhashed = { ...entry, seq };
    hash = entryHash(hash, numbered, numbered.changes);
    return { ...numbered, hash };
  });
  return { rows, head: { seq, hash } };
}

/** Where a chain starts (its anchor: the last purged entry, or seq 0) and where it ends (its head). */
export interface ChainEnds {
  anchor: { seq: number; hash: string };
  head: { seq: number; hash: string };
}

/** What walking a chain found: how many entries hold, or the first that does not. */
export type ChainWalk =
  | { ok: true; entries: number }
  | { ok: false; entries: number; id: string | null; seq: number; problem: string };

/**
 * Recomputes a chain from its anchor over `rows` in seq order (the database's, or an export's audit file):
 * every seq present in order, every hash over the previous one, the last equal to the head's. Rows after
 * the head are ignored. Names the first entry edited, removed or reordered.
 */
export async function walkChain(ends: ChainEnds, rows: AsyncIterable<AuditEntriesTable>): Promise<ChainWalk> {
  let seq = ends.anchor.seq;
  let prev = ends.anchor.hash;
  let entries = 0;
  const broken = (id: string | null, at: number, problem: string): ChainWalk => ({
    ok: false,
    entries,
    id,
    seq: at,
    problem,
  });
  for await (const row of rows) {
    const at = Number(row.seq);
    if (at > ends.head.seq) break;
    if (at !== seq + 1) {
      return broken(row.id, at, `entry seq ${seq + 1} is missing: removed before ${row.id} (seq ${at})`);
    }
    if (entryHash(prev, row) !== row.hash) {
      return broken(row.id, at, `entry ${row.id} (seq ${at}) was edited or reordered: its hash does not match`);
    }
    seq = at;
    prev = row.hash;
    entries++;
  }
  if (seq !== ends.head.seq || prev !== ends.head.hash) {
    return broken(null, seq + 1, `entries after seq ${seq} are missing: the head is at seq ${ends.head.seq}`);
  }
  return { ok: true, entries };
}
