import type { WriteTx } from '../../platform/unit-of-work.js';
import { auditRepository as repo } from './audit.repository.js';

/** Who is erased: their user rows' ids, their email as each row spells it (and in lower case), the names they had. */
export interface ErasedPerson {
  userIds: readonly string[];
  emails: readonly string[];
  names: readonly string[];
}

export const ERASED = '[erased]';

/** Text with each occurrence of an email, and of each name as a JSON string, replaced by `[erased]`. */
export function scrubbed(text: string, person: Pick<ErasedPerson, 'emails' | 'names'>): string {
  let out = text;
  for (const email of person.emails) out = out.split(email).join(ERASED);
  for (const name of person.names) out = out.split(JSON.stringify(name)).join(JSON.stringify(ERASED));
  return out;
}

/** The names the log says a person had (each `changes.name` of an entry about one of their user rows). */
export async function namesInAuditLog(trx: WriteTx, userIds: readonly string[]): Promise<string[]> {
  if (userIds.length === 0) return [];
  const names = new Set<string>();
  for (const row of await repo.personEntries(trx, userIds, [])) {
    if (!userIds.includes(row.target_id)) continue;
    const name = (JSON.parse(row.changes) as Record<string, { before?: unknown; after?: unknown }>).name;
    for (const v of [name?.before, name?.after]) if (typeof v === 'string' && v !== '' && v !== ERASED) names.add(v);
  }
  return [...names];
}

/**
 * Erases a person from the audit log (docs/data-lifecycle.md#erasing-a-person), in the erasure's transaction: in
 * each entry that names them, an actor that is them reads `[erased]` and loses its ip and user agent, their email
 * and name in `changes` read `[erased]`, and the entry's salt is deleted, so its commitments (which the chain
 * hashes) stay and the chain verifies. Pending entries must be numbered first. Returns how many entries changed.
 */
export async function eraseFromAuditLog(trx: WriteTx, person: ErasedPerson): Promise<number> {
  if (person.userIds.length === 0) return 0;
  const needles = [...person.emails, ...person.names.map((n) => JSON.stringify(n))];
  const ids = new Set(person.userIds);
  const rows = await repo.personEntries(trx, person.userIds, needles);
  for (const row of rows) {
    const theirs = (row.actor_type === 'user' && ids.has(row.actor_id)) || ids.has(row.actor_user_id ?? '');
    await repo.erasePersonal(trx, row.id, {
      actor_name: row.actor_type === 'user' && ids.has(row.actor_id) ? ERASED : row.actor_name,
      ip: theirs ? null : row.ip,
      user_agent: theirs ? null : row.user_agent,
      changes: scrubbed(row.changes, person),
    });
  }
  return rows.length;
}
