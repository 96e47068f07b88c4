/**
 * Billing periods and amounts: pure functions, no clock, no storage (docs/billing.md).
 *
 * Periods: monthly, anchored at the workspace's creation date in UTC. Each period starts at
 * 00:00:00.000 UTC on the anchor day (the day of the month the workspace was created on); in a
 * month without that day (anchor 29, 30 or 31) it starts on the month's last day instead, and the
 * month after goes back to the anchor day. A workspace created 2028-01-31T15:00Z has periods
 * starting 2028-01-31, 2028-02-29 (leap year), 2028-03-31, 2028-04-30, 2028-05-31 … Periods start at
 * midnight so that they fall on the boundaries of the usage counts' minutes, hours and days.
 */

const DAY_MS = 86_400_000;

export interface Period {
  /** 0 for the period the workspace was created in, then 1, 2, … */
  index: number;
  /** Inclusive start, ms since the epoch (UTC midnight). */
  start: number;
  /** Exclusive end: the next period's start. */
  end: number;
}

function daysInMonth(year: number, month0: number): number {
  return new Date(Date.UTC(year, month0 + 1, 0)).getUTCDate();
}

/** Start of the `index`-th period of a workspace created at `anchor` (ms). */
export function periodStart(anchor: number, index: number): number {
  const a = new Date(anchor);
  const y = a.getUTCFullYear();
  const m = a.getUTCMonth() + index;
  const first = new Date(Date.UTC(y, m, 1));
  const day = Math.min(a.getUTCDate(), daysInMonth(first.getUTCFullYear(), first.getUTCMonth()));
  return Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), day);
}

/** The period of a workspace created at `anchor` that contains the instant `t` (ms). */
export function periodAt(anchor: number, t: number): Period {
  const a = new Date(anchor);
  const d = new Date(t);
  let index = (d.getUTCFullYear() - a.getUTCFullYear()) * 12 + (d.getUTCMonth() - a.getUTCMonth());
  while (periodStart(anchor, index) > t) index--;
  while (periodStart(anchor, index + 1) <= t) index++;
  return { index, start: periodStart(anchor, index), end: periodStart(anchor, index + 1) };
}

/** The period with this index. */
export function periodByIndex(anchor: number, index: number): Period {
  return { index, start: periodStart(anchor, index), end: periodStart(anchor, index + 1) };
}

/** Whole days of a period (28..31). */
export function periodDays(p: Period): number {
  return Math.round((p.end - p.start) / DAY_MS);
}

/**
 * `a × b / c` rounded half up, for non-negative integers, exact (BigInt), for cents.
 * Negative `a` rounds half away from zero (a credit of 0.5 cent is 1 cent).
 */
export function mulDivRoundHalfUp(a: number, b: number, c: number): number {
  if (c <= 0) throw new RangeError('divisor must be positive');
  const sign = a < 0 ? -1n : 1n;
  const n = BigInt(Math.abs(a)) * BigInt(b);
  const q = (2n * n + BigInt(c)) / (2n * BigInt(c));
  return Number(sign * q);
}

/**
 * The proration of an upgrade at `at` inside `period` (docs/billing.md#plan-changes): the difference of
 * the base fees times the whole seconds left in the period over the period's seconds, in cents,
 * rounded half up. Seconds left are counted whole: a change at 12:00:00.700 counts from 12:00:01.
 */
export function proration(
  period: Period,
  at: number,
  fromBaseCents: number,
  toBaseCents: number,
): { secondsLeft: number; periodSeconds: number; amountCents: number } {
  const periodSeconds = Math.round((period.end - period.start) / 1000);
  const secondsLeft = Math.max(0, Math.min(periodSeconds, Math.floor((period.end - at) / 1000)));
  return {
    secondsLeft,
    periodSeconds,
    amountCents: mulDivRoundHalfUp(toBaseCents - fromBaseCents, secondsLeft, periodSeconds),
  };
}

/** Overage (docs/billing.md#plans): requests over the included ones, priced per started unit. */
export function overage(
  billable: number,
  plan: {
    included_requests: number | null;
    overage_unit_requests: number | null;
    overage_unit_price_cents: number | null;
  },
): { excess: number; units: number; amountCents: number } {
  if (
    plan.included_requests === null ||
    plan.overage_unit_requests === null ||
    plan.overage_unit_price_cents === null
  ) {
    return { excess: 0, units: 0, amountCents: 0 };
  }
  const excess = Math.max(0, billable - plan.included_requests);
  const units = Math.ceil(excess / plan.overage_unit_requests);
  return { excess, units, amountCents: units * plan.overage_unit_price_cents };
}
