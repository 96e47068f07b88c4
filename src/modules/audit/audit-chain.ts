import { createHash, randomBytes } from 'node:crypto';
import type { AuditEntriesTable } from '../../db/types.js';
import { canonicalJson } from '../../lib/canonical-json.js';

type Unhashed = Omit<AuditEntriesTable, 'hash'>;
const j = (v: string | null) => (v === null ? 'null' : JSON.stringify(v));
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The fields of an entry that may name a person: the chain hashes a salted commitment of each (docs/api.md#audit-log). */
export const PERSONAL_FIELDS = ['actor_name', 'changes', 'ip', 'user_agent'] as const;
export type PersonalField = (typeof PERSONAL_FIELDS)[number];
export type Commitments = Record<PersonalField, string | null>;

/** SHA-256 hex of the salt (hex) followed by the value's text; null for a null value. */
export function commitment(salt: string, value: string | null): string | null {
  return value === null ? null : sha256(salt + value);
}

/** The commitments of an entry's personal fields under `salt`; `changesText` is the canonical text of `changes`. */
export function commitmentsOf(
  salt: string,
  e: Pick<Unhashed, 'actor_name' | 'ip' | 'user_agent'>,
  changesText: string,
): Commitments {
  return {
    actor_name: commitment(salt, e.actor_name),
    changes: commitment(salt, changesText),
    ip: commitment(salt, e.ip),
    user_agent: commitment(salt, e.user_agent),
  };
}

/** The canonical text of commitments (keys sorted): what `audit_entries.commitments` stores and the chain covers. */
export function commitmentsText(c: Commitments): string {
  return `{"actor_name":${j(c.actor_name)},"changes":${j(c.changes)},"ip":${j(c.ip)},"user_agent":${j(c.user_agent)}}`;
}

/**
 * The canonical JSON of an entry of the first form (`commitments` null, written before personal data could be
 * erased): every column but `hash`, keys sorted, `seq` a number and `changes` the JSON value (its canonical text).
 * Written out key by key: it is `canonicalJson` of that object (audit-chain.test.ts holds them equal).
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
 * The canonical JSON of an entry of the second form (`v: 2`): the columns that name no one as they are, and, in
 * place of the personal fields, their commitments (`commitments`, its canonical text). Equal to `canonicalJson` of
 * that object (audit-chain.test.ts).
 */
export function canonicalEntryV2(e: Unhashed, commitments: string): string {
  return (
    `{"action":${j(e.action)},"actor_id":${j(e.actor_id)},"actor_type":${j(e.actor_type)},` +
    `"actor_user_id":${j(e.actor_user_id)},"commitments":${commitments},"env":${j(e.env)},"id":${j(e.id)},` +
    `"request_id":${j(e.request_id)},"seq":${JSON.stringify(Number(e.seq))},"target_id":${j(e.target_id)},` +
    `"target_type":${j(e.target_type)},"time":${j(e.time)},"v":2,"workspace_id":${j(e.workspace_id)}}`
  );
}

/**
 * docs/api.md#audit-log: SHA-256 hex of the previous entry's hash followed by the entry's canonical JSON, of its
 * form (the second when it has `commitments`). `changesText`: the canonical text of the first form's `changes`
 * where the caller has it.
 */
export function entryHash(prevHash: string, entry: Unhashed, changesText?: string): string {
  if (entry.commitments !== null && entry.commitments !== undefined) {
    return sha256(prevHash + canonicalEntryV2(entry, entry.commitments));
  }
  const changes = changesText ?? canonicalJson(JSON.parse(entry.changes) as unknown);
  return sha256(prevHash + canonicalEntry(entry, changes));
}

/**
 * Where an entry's personal fields differ from its commitments: the first field that does, or null. An erased
 * entry (no salt) has nothing to compare: its values are gone, its commitments stay in the chain.
 */
export function personalMismatch(entry: Unhashed): PersonalField | null {
  if (entry.commitments === null || entry.personal_salt === null) return null;
  const stored = JSON.parse(entry.commitments) as Commitments;
  const actual = commitmentsOf(entry.personal_salt, entry, canonicalJson(JSON.parse(entry.changes) as unknown));
  return PERSONAL_FIELDS.find((f) => stored[f] !== actual[f]) ?? null;
}

/**
 * Numbers a workspace's new entries after its head (seq, hash) and chains them in the second form, each with a
 * salt of its own; returns them with the head they leave. `changes` of each is its canonical text (the append
 * stores that).
 */
export function numberAfter(
  head: { seq: number; hash: string },
  entries: readonly Omit<Unhashed, 'seq' | 'personal_salt' | 'commitments'>[],
): { rows: AuditEntriesTable[]; head: { seq: number; hash: string } } {
  let { seq, hash } = head;
  const rows = entries.map((entry) => {
    seq += 1;
    const salt = randomBytes(16).toString('hex');
    const commitments = commitmentsText(commitmentsOf(salt, entry, entry.changes));
    const numbered: Unhashed = { ...entry, seq, personal_salt: salt, commitments };
    hash = sha256(hash + canonicalEntryV2(numbered, commitments));
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
    const field = personalMismatch(row);
    if (field) {
      return broken(
        row.id,
        at,
        `entry ${row.id} (seq ${at}) was edited or reordered: its ${field} does not match its commitment`,
      );
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
