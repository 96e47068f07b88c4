import type { AuditEntriesTable } from '../../db/types.js';
import type { AuditActor, AuditRecord } from '../../kernel/audit-actions.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { newId } from '../../kernel/ids.js';
import type { Actor } from '../../kernel/principal.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import type { WriteTx } from '../auth/write-runner.js';
import { auditRepository as repo } from './audit.repository.js';
import { entryHash } from './audit-chain.js';

/** Names the entry's actor from the runner's actor: a key's name, a user's name or email (read in the transaction). */
export type DescribeActor = (trx: WriteTx, actor: Actor) => Promise<AuditActor>;

/**
 * Appends a transaction's records to their workspaces' chains: the head moves on first (its row lock
 * orders the writers of a workspace, so `seq` has no gaps), then the entries go in, each hashed over
 * the previous one's hash. Throws when an anonymous or person actor's record names no one.
 */
export function createAuditAppender(deps: { clock: Clock; describe: DescribeActor }) {
  return async function append(trx: WriteTx, actor: Actor, records: readonly AuditRecord[]): Promise<void> {
    if (records.length === 0) return;
    const time = isoAt(deps.clock.now());
    const byWorkspace = new Map<string, AuditRecord[]>();
    for (const r of records) {
      const ws = r.workspaceId ?? ('workspaceId' in actor ? actor.workspaceId : undefined);
      if (!ws) throw new Error(`audit record ${r.action} by a ${actor.kind} actor names no workspace`);
      byWorkspace.set(ws, [...(byWorkspace.get(ws) ?? []), r]);
    }
    let described: AuditActor | undefined;
    const actorOf = async (r: AuditRecord): Promise<AuditActor> => {
      if (r.actor) return r.actor;
      if (actor.kind === 'anonymous' || actor.kind === 'person') {
        throw new Error(`audit record ${r.action} by a ${actor.kind} actor must name the user concerned`);
      }
      described ??= await deps.describe(trx, actor);
      return described;
    };
    const origin = actor.origin;
    // Workspaces in a fixed order, so two transactions touching the same two never wait on each other crosswise.
    for (const ws of [...byWorkspace.keys()].sort()) {
      const list = byWorkspace.get(ws) as AuditRecord[];
      const head = await repo.advanceHead(trx, ws, list.length);
      let prev = head.hash;
      const rows: AuditEntriesTable[] = [];
      for (const [i, r] of list.entries()) {
        const who = await actorOf(r);
        // Stored as its canonical text, which the hash covers as it is (audit-chain.ts).
        const changes = canonicalJson(r.changes ?? {});
        const entry: Omit<AuditEntriesTable, 'hash'> = {
          id: newId('audit'),
          workspace_id: ws,
          seq: head.seq + i + 1,
          time,
          actor_type: who.type,
          actor_id: who.id,
          actor_name: who.name,
          actor_user_id: who.user_id ?? null,
          action: r.action,
          target_type: r.target.type,
          target_id: r.target.id,
          env: r.env,
          changes,
          request_id: origin?.requestId ?? null,
          ip: origin?.ip ?? null,
          user_agent: origin?.userAgent ?? null,
        };
        prev = entryHash(prev, entry, changes);
        rows.push({ ...entry, hash: prev });
      }
      await repo.append(trx, ws, rows);
    }
  };
}
export type AuditAppender = ReturnType<typeof createAuditAppender>;
