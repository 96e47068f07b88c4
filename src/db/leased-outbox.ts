import { type Clock, isoAt } from '../kernel/clock.js';
import type { Actor } from '../kernel/principal.js';

/** The lease of one claim: from `now` until `leaseUntil` (ISO 8601, UTC). */
export interface LeaseWindow {
  now: string;
  leaseUntil: string;
  limit: number;
}

/**
 * The drain loop of a leased outbox (the notification outbox and the integrations' messages): claim
 * a batch of due rows with a lease (`claim`, in a write transaction of `actor`), send each and record
 * its outcome (`sendOne`), and claim again while batches come back full. One run at a time per
 * process: a call while a run is under way (a slow server outlasting the job's interval) waits for
 * that run. Rows are sent one after another, or all of a batch at once (`concurrent`).
 */
export function createLeasedOutbox<T>(opts: {
  clock: Clock;
  leaseMs: number;
  batch: number;
  concurrent: boolean;
  claim(actor: Actor, lease: LeaseWindow): Promise<T[]>;
  /** Sends one claimed row and records the outcome; true when it was sent. */
  sendOne(actor: Actor, row: T): Promise<boolean>;
}): { sendDue(actor: Actor): Promise<number> } {
  let running: Promise<number> | null = null;

  async function drain(actor: Actor): Promise<number> {
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
    /** Sends every due row as `actor`; returns how many were sent. */
    sendDue(actor: Actor): Promise<number> {
      running ??= drain(actor).finally(() => {
        running = null;
      });
      return running;
    },
  };
}
