import type { AuditAction } from '../kernel/audit-actions.js';
import type { SystemActor } from '../kernel/principal.js';
import type { Unit, WriteTx } from './unit-of-work.js';

/** How many rows one statement of a purge deletes at most (docs/settings.md#retention). */
export const PURGE_BATCH_ROWS = 1000;

/**
 * One bounded delete of a purge: removes at most `limit` rows in `trx` and answers how many it removed per
 * workspace (the rows' `workspace_id`; an empty map when nothing was left).
 */
export type PurgeStep = (trx: WriteTx, limit: number) => Promise<Map<string, number>>;

/** Every row of `rows` counted under its workspace. */
export function countByWorkspace(rows: readonly { workspace_id: string }[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of rows) out.set(r.workspace_id, (out.get(r.workspace_id) ?? 0) + 1);
  return out;
}

function sum(m: Map<string, number>): number {
  let n = 0;
  for (const v of m.values()) n += v;
  return n;
}

/**
 * Runs a purge in bounded batches (docs/settings.md#retention): each named step runs again and again, each
 * batch its own short change as `u`'s actor, until a batch removes fewer than `limit` rows; a process killed
 * between batches keeps what it committed, and the next run deletes the rest. The last batch's change records
 * one `action` entry in each workspace the run deleted something of, with the count per step
 * (`<step>_purged`); a run that deleted nothing records nothing. Returns the rows removed, all steps together.
 */
export async function purgeInBatches(
  u: Unit<SystemActor>,
  purge: {
    action: AuditAction;
    /** The entry's target type; its id is the workspace's. */
    target: string;
    steps: readonly { name: string; run: PurgeStep }[];
    limit?: number;
  },
): Promise<number> {
  const limit = purge.limit ?? PURGE_BATCH_ROWS;
  /** Committed counts: workspace → step → rows. */
  const done = new Map<string, Map<string, number>>();
  const add = (into: Map<string, Map<string, number>>, step: string, counts: Map<string, number>) => {
    for (const [ws, n] of counts) {
      const perStep = into.get(ws) ?? new Map<string, number>();
      perStep.set(step, (perStep.get(step) ?? 0) + n);
      into.set(ws, perStep);
    }
  };
  let total = 0;
  for (const [i, step] of purge.steps.entries()) {
    const lastStep = i === purge.steps.length - 1;
    for (;;) {
      const removed = await u.run(async ({ trx, audit }) => {
        const counts = await step.run(trx, limit);
        if (lastStep && sum(counts) < limit) {
          // The run's last batch: its entries commit with it (a copy, so a retried change counts once).
          const all = new Map([...done].map(([ws, m]) => [ws, new Map(m)]));
          add(all, step.name, counts);
          for (const [ws, perStep] of all) {
            const changes: Record<string, { before: null; after: number }> = {};
            for (const s of purge.steps)
              changes[`${s.name}_purged`] = { before: null, after: perStep.get(s.name) ?? 0 };
            audit.record({
              action: purge.action,
              target: { type: purge.target, id: ws },
              env: null,
              workspaceId: ws,
              changes,
            });
          }
        }
        return counts;
      });
      add(done, step.name, removed);
      const n = sum(removed);
      total += n;
      if (n < limit) break;
    }
  }
  return total;
}

/**
 * Deletes expired state that belongs to no workspace's log (pending sign-ins, throttle failures, challenges) in
 * bounded batches: `step` removes at most `limit` rows and answers how many; each batch is its own short change,
 * until one removes fewer than `limit`. No audit entry. Returns the rows removed.
 */
export async function expireInBatches(
  u: Unit,
  step: (trx: WriteTx, limit: number) => Promise<number>,
  limit = PURGE_BATCH_ROWS,
): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await u.run(({ trx }) => step(trx, limit));
    total += n;
    if (n < limit) return total;
  }
}
