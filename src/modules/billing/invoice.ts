import type { InvoiceLine } from './billing.schemas.js';
import { overage, type Period } from './periods.js';
import type { Plan } from './plans.js';

/** A plan change as the invoice sees it (subscription_changes, plus a downgrade still pending). */
export interface PlanEvent {
  kind: 'upgrade' | 'downgrade';
  at: number;
  from: string;
  to: string;
  /** Upgrades: the period they were made in and what they owe (stored when made). */
  periodStart?: number;
  secondsLeft?: number;
  periodSeconds?: number;
  prorationCents?: number;
}

/**
 * The plan in force from the events, applying those `applies` accepts, in order of time. Before
 * any event the plan is the first event's `from` (or `current` with no events at all).
 */
function planWith(events: PlanEvent[], current: string, applies: (e: PlanEvent) => boolean): string {
  let plan = events[0]?.from ?? current;
  for (const e of events) {
    if (!applies(e)) break;
    plan = e.to;
  }
  return plan;
}

/** The plan the period's base fee is charged for: in force at its start (a downgrade at the boundary counts, an upgrade at it is prorated). */
export function basePlanOf(events: PlanEvent[], current: string, p: Period): string {
  return planWith(events, current, (e) => (e.kind === 'downgrade' ? e.at <= p.start : e.at < p.start));
}

/** The plan in force at the period's last instant (its included requests and overage prices apply). */
export function endPlanOf(events: PlanEvent[], current: string, p: Period): string {
  return planWith(events, current, (e) => e.at < p.end);
}

const usd = (cents: number) =>
  `${cents < 0 ? '−' : ''}$${Math.floor(Math.abs(cents) / 100).toLocaleString('en-US')}.${String(Math.abs(cents) % 100).padStart(2, '0')}`;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const n = (x: number) => x.toLocaleString('en-US');

/**
 * The lines of a period's invoice (docs/billing.md#invoices): the base fee of the plan at its start,
 * one proration line per upgrade made in it (the amount stored when it was made), and the overage of
 * the plan at its end. Every amount is integer cents; each line is rounded on its own (half up).
 */
export function invoiceLines(
  p: Period,
  events: PlanEvent[],
  current: string,
  billable: number,
  planOf: (id: string) => Plan,
): { plan: string; lines: InvoiceLine[]; totalCents: number } {
  const base = planOf(basePlanOf(events, current, p));
  const end = planOf(endPlanOf(events, current, p));
  const lines: InvoiceLine[] = [
    {
      kind: 'base',
      description: `${base.name} plan, ${day(p.start)} to ${day(p.end)}`,
      quantity: 1,
      unit_price_cents: base.base_price_cents,
      amount_cents: base.base_price_cents,
    },
  ];
  for (const e of events) {
    if (e.kind !== 'upgrade' || e.periodStart !== p.start) continue;
    const from = planOf(e.from);
    const to = planOf(e.to);
    const amount = e.prorationCents ?? 0;
    lines.push({
      kind: 'proration',
      description: `Upgrade ${from.name} to ${to.name} at ${new Date(e.at).toISOString()}: ${n(e.secondsLeft ?? 0)} of ${n(e.periodSeconds ?? 0)} seconds left × (${usd(to.base_price_cents)} − ${usd(from.base_price_cents)})`,
      quantity: 1,
      unit_price_cents: amount,
      amount_cents: amount,
    });
  }
  const o = overage(billable, end);
  if (o.units > 0) {
    lines.push({
      kind: 'overage',
      description: `${n(o.excess)} requests over the ${n(end.included_requests ?? 0)} included in ${end.name}, per started ${n(end.overage_unit_requests ?? 0)}`,
      quantity: o.units,
      unit_price_cents: end.overage_unit_price_cents ?? 0,
      amount_cents: o.amountCents,
    });
  }
  return { plan: end.id, lines, totalCents: lines.reduce((s, l) => s + l.amount_cents, 0) };
}
