import { dialectOf } from '../../db/dialect.js';
import type { AuditPendingTable } from '../../db/types.js';
import type { AuditActor, AuditRecord } from '../../kernel/audit-actions.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { newId } from '../../kernel/ids.js';
import type { Actor } from '../../kernel/principal.js';
import { canonicalJson } from '../../lib/canonical-json.js';
import type { Subscriber, WriteTx } from '../../platform/unit-of-work.js';
import { auditRepository as repo } from './audit.repository.js';
import { numberAfter } from './audit-chain.js';
import type { AuditSequencer } from './audit-sequencer.js';

/** Names the entry's actor from the runner's actor: a key's name, a user's name or email (read in the transaction). */
export type DescribeActor = (trx: WriteTx, actor: Actor) => Promise<AuditActor>;

/** Orders this process's pending entries (one change's among them) for the sequencer. */
let written = 0;

/**
 * Writes a transaction's records, last in the transaction. Where writers run one at a time (SQLite) they
 * are numbered and chained at once, after the workspace's head. Elsewhere (PostgreSQL) they are written
 * pending, taking no lock shared with the workspace's other writers, and the sequencer (audit-sequencer.ts)
 * numbers them right after the commit; returns the workspaces it must number. Throws when an anonymous
 * or person actor's record names no one.
 */
export function createAuditAppender(deps: { clock: Clock; describe: DescribeActor }) {
  return async function append(trx: WriteTx, actor: Actor, records: readonly AuditRecord[]): Promise<string[]> {
    if (records.length === 0) return [];
    const time = isoAt(deps.clock.now());
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
    const rows: AuditPendingTable[] = [];
    for (const r of records) {
      const ws = r.workspaceId ?? ('workspaceId' in actor ? actor.workspaceId : undefined);
      if (!ws) throw new Error(`audit record ${r.action} by a ${actor.kind} actor names no workspace`);
      const who = await actorOf(r);
      rows.push({
        id: newId('audit'),
        workspace_id: ws,
        pos: ++written,
        time,
        actor_type: who.type,
        actor_id: who.id,
        actor_name: who.name,
        actor_user_id: who.user_id ?? null,
        action: r.action,
        target_type: r.target.type,
        target_id: r.target.id,
        env: r.env,
        // Stored as its canonical text, which the hash covers as it is (audit-chain.ts).
        changes: canonicalJson(r.changes ?? {}),
        request_id: origin?.requestId ?? null,
        ip: origin?.ip ?? null,
        user_agent: origin?.userAgent ?? null,
      });
    }
    const workspaces = [...new Set(rows.map((r) => r.workspace_id))].sort();
    if (!dialectOf(trx).serialWrites) {
      await repo.addPending(trx, rows);
      return workspaces;
    }
    // Writes run one at a time here: numbered at once, in the change's transaction, nothing left to sequence.
    for (const ws of workspaces) {
      const head = await repo.lockHead(trx, ws);
      const entries = rows.filter((r) => r.workspace_id === ws).map(({ pos: _pos, ...entry }) => entry);
      await repo.append(trx, ws, numberAfter(head, entries).rows);
    }
    return [];
  };
}
export type AuditAppender = ReturnType<typeof createAuditAppender>;

/**
 * The audit log as a subscriber of changes (registered in src/services.ts): what a change recorded on its trail
 * is appended last in its transaction, after the actor's check (a change that fails it, or throws, leaves no entry),
 * and, where entries are left pending (PostgreSQL), numbered right after the commit, before the change's caller
 * resumes. A failure to number leaves them pending for the next read of the log (`onPending`); the change stands.
 */
export function createAuditSubscriber(deps: {
  clock: Clock;
  describe: DescribeActor;
  sequencer: AuditSequencer;
  onPending: (err: unknown) => void;
}): Subscriber {
  const append = createAuditAppender(deps);
  return {
    name: 'audit log',
    async closing(c, records) {
      const pending = await append(c.trx, c.actor, records);
      if (pending.length === 0) return;
      c.afterCommit((uow) => deps.sequencer.sequence(uow, pending).catch(deps.onPending));
    },
  };
}
