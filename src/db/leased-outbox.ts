import { type Kysely, sql } from 'kysely';
import { type Clock, isoAt } from '../kernel/clock.js';
import { type Db, dialectOf } from './dialect.js';

/** The tables that are leased outboxes: each row is sent by one sender at a time. */
export type LeasedTable = 'notifications' | 'integration_messages';

/** The columns a leased outbox's rows share (migrations 012 and 017). */
interface LeasedRow {
  id: string;
  status: string;
  next_attempt_at: string | null;
  lease_until: string | null;
  leased_by: string | null;
  attempt_count: number;
}
type LeasedDb = Kysely<Record<LeasedTable, LeasedRow>>;
const leased = (db: Db) => db as unknown as LeasedDb;

/**
 * The claim SQL of both outboxes: leases up to `limit` due pending rows of `table` (oldest due first)
 * to `workerId` until `leaseUntil`, and returns their ids in id order. Concurrent senders skip each
 * other's rows (`SKIP LOCKED` on PostgreSQL). Run it in a write transaction.
 */
export async function claimLeased(
  db: Db,
  table: LeasedTable,
  opts: {
    now: string;
    leaseUntil: string;
    workerId: string;
    limit: number;
    /**
     * The row types still sent while their workspace is scheduled for deletion; every other row of such a workspace
     * is held (docs/data-lifecycle.md#deleting-a-workspace) and goes out if the deletion is cancelled.
     */
    sentWhileDeleting: readonly string[];
  },
): Promise<string[]> {
  const q = leased(db);
  const sent = opts.sentWhileDeleting.length === 0 ? sql`false` : sql`type in (${sql.join(opts.sentWhileDeleting)})`;
  const due = q
    .selectFrom(table)
    .select('id')
    .where('status', '=', 'pending')
    .where(
      sql<boolean>`(${sent} or workspace_id not in (select id from workspaces where deletion_scheduled_at is not null))`,
    )
    .where('next_attempt_at', '<=', opts.now)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', opts.now)]))
    .orderBy('next_attempt_at')
    .orderBy('id')
    .limit(opts.limit);
  // As withRowLockSkipping (row-locks.ts): FOR UPDATE SKIP LOCKED where the database has row locks.
  const rows = await (dialectOf(db).rowLocks ? due.forUpdate().skipLocked() : due).execute();
  const ids = rows.map((r) => r.id).sort();
  if (ids.length === 0) return [];
  await q
    .updateTable(table)
    .set({ lease_until: opts.leaseUntil, leased_by: opts.workerId })
    .where('id', 'in', ids)
    .execute();
  return ids;
}

/**
 * The finish SQL of both outboxes: writes a send's outcome (`fields`, the lease cleared, the attempt
 * counted when `attempted`) only while `workerId` still holds the lease of the pending row; returns
 * whether it did.
 */
export async function finishLeased(
  db: Db,
  table: LeasedTable,
  id: string,
  workerId: string,
  fields: Record<string, string | number | null>,
  attempted: boolean,
): Promise<boolean> {
  const r = await leased(db)
    .updateTable(table)
    .set((eb) => ({
      ...fields,
      lease_until: null,
      leased_by: null,
      attempt_count: attempted ? eb('attempt_count', '+', 1) : eb.ref('attempt_count'),
    }))
    .where('id', '=', id)
    .where('leased_by', '=', workerId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** The lease of one claim: from `now` until `leaseUntil` (ISO 8601, UTC). */
export interface LeaseWindow {
  now: string;
  leaseUntil: string;
  limit: number;
}

/**
 * The drain loop of a leased outbox (the notification outbox and the integrations' messages): claim
 * a batch of due rows with a lease (`claim`, in a write of the caller's writer `W`: a unit of work's door), send each and record
 * its outcome (`sendOne`), and claim again while batches come back full. One run at a time per
 * process: a call while a run is under way (a slow server outlasting the job's interval) waits for
 * that run. Rows are sent one after another, or all of a batch at once (`concurrent`).
 */
export function createLeasedOutbox<T, W>(opts: {
  clock: Clock;
  leaseMs: number;
  batch: number;
  concurrent: boolean;
  claim(writer: W, lease: LeaseWindow): Promise<T[]>;
  /** Sends one claimed row and records the outcome; true when it was sent. */
  sendOne(writer: W, row: T): Promise<boolean>;
}): { sendDue(writer: W): Promise<number> } {
  let running: Promise<number> | null = null;

  async function drain(actor: W): Promise<number> {
    let sent = 0;
    for (;;) {
      const now = opts.clock.now();
      const claimed = await opts.claim(actor, {
        now: isoAt(now),
        leaseUntil: isoAt(now + opts.leaseMs),
        limit: opts.batch,
      });
      if (opts.concurrent) {
        sent += (await Promise.all(claimed.map((r) => opts.sendOne(actor, r)))).filter(Boolean).length;
      } else {
        for (const r of claimed) if (await opts.sendOne(actor, r)) sent++;
      }
      if (claimed.length < opts.batch) return sent;
    }
  }

  return {
    /** Sends every due row, writing with `actor`; returns how many were sent. */
    sendDue(actor: W): Promise<number> {
      running ??= drain(actor).finally(() => {
        running = null;
      });
      return running;
    },
  };
}
