import type { Db } from '../../db/dialect.js';
import type { InvoicesTable, SubscriptionChangesTable, SubscriptionsTable } from '../../db/types.js';
import { type Clock, isoAt } from '../../kernel/clock.js';
import { AppError, ConflictError, fieldError, NotFoundError } from '../../kernel/errors.js';
import { isId, newId } from '../../kernel/ids.js';
import type { Actor, Principal, Tenant } from '../../kernel/principal.js';
import { requireAdmin } from '../../kernel/principal.js';
import { encodeCursor, type Page, type PageRequest } from '../../lib/paging.js';
import type { WriteRunner, WriteTx } from '../auth/write-runner.js';
import type { BillingNotice } from '../notifications/notifications.service.js';
import type { UsageService } from '../usage/usage.service.js';
import { billingRepository as repo } from './billing.repository.js';
import type { Invoice, InvoiceLine, PlanChangeOut, Subscription, UpcomingInvoice } from './billing.schemas.js';
import { invoiceLines, type PlanEvent } from './invoice.js';
import { type Period, periodAt, periodByIndex, proration } from './periods.js';
import type { Plan } from './plans.js';

/** Usage notifications at these percentages of a period's included requests, once each (D27). */
export const USAGE_THRESHOLDS = [50, 80, 100] as const;

/** An invoice is finalized this long after its period ends (D28): late flushes of usage land first. */
export const FINALIZE_AFTER_MS = 60 * 60_000;

export type PlanChange =
  | { change: 'upgraded'; from: string; to: string; proration_cents: number }
  | { change: 'downgrade_scheduled'; from: string; to: string; effective_at: string }
  | { change: 'downgrade_cancelled'; plan: string }
  | { change: 'unchanged'; plan: string };

/** Plans, subscriptions, plan changes and invoices (D28, docs/billing.md). */
export function createBillingService(deps: {
  db: Db;
  clock: Clock;
  writeAs: WriteRunner;
  plans: readonly Plan[];
  usage: Pick<UsageService, 'billableCount'>;
  /** What a downgrade is checked against: the live environment's resources and webhooks. */
  counts: { resources(t: Tenant, d: Db): Promise<number>; webhooks(t: Tenant, d: Db): Promise<number> };
  /** Locks the workspace's row until `trx` ends (workspaces module): serialises creations against a plan limit. */
  lockWorkspace(trx: Db, workspaceId: string): Promise<void>;
  /** PLAN_LIMITS=on: creations are checked against the plan (checkCreate); off: never refused. */
  enforceLimits: boolean;
  /** Writes a usage or invoice notification to the admins in `trx` (the notifications service). */
  notify?: (trx: Db, notice: BillingNotice) => Promise<void>;
}) {
  const { db, clock, writeAs } = deps;

  function planOf(id: string): Plan {
    const plan = deps.plans.find((p) => p.id === id);
    if (!plan) {
      throw new AppError(
        409,
        'plan_unknown',
        `This workspace is on the plan "${id}", which PLANS_FILE no longer defines; add it back or move the workspace to another plan.`,
      );
    }
    return plan;
  }

  /** subscription_changes and a pending downgrade as plan events, in order of time. */
  function eventsOf(sub: SubscriptionsTable, changes: SubscriptionChangesTable[]): PlanEvent[] {
    const events: PlanEvent[] = [];
    for (const c of changes) {
      if (c.kind === 'upgrade') {
        events.push({
          kind: 'upgrade',
          at: Date.parse(c.effective_at),
          from: c.from_plan,
          to: c.to_plan,
          periodStart: Date.parse(c.period_start),
          secondsLeft: Number(c.seconds_left),
          periodSeconds: Number(c.period_seconds),
          prorationCents: Number(c.proration_cents),
        });
      } else if (c.kind === 'downgrade_applied') {
        events.push({ kind: 'downgrade', at: Date.parse(c.effective_at), from: c.from_plan, to: c.to_plan });
      }
    }
    if (sub.pending_plan !== null && sub.pending_from !== null) {
      events.push({ kind: 'downgrade', at: Date.parse(sub.pending_from), from: sub.plan, to: sub.pending_plan });
    }
    return events;
  }

  /** The plan in force at `t`: the stored one, or the pending downgrade once its time has come. */
  function planNow(sub: SubscriptionsTable, t: number): string {
    return sub.pending_plan !== null && sub.pending_from !== null && Date.parse(sub.pending_from) <= t
      ? sub.pending_plan
      : sub.plan;
  }

  async function subscriptionOrThrow(d: Db, workspaceId: string, lock = false): Promise<SubscriptionsTable> {
    const sub = await repo.subscription(d, workspaceId, lock);
    if (!sub) throw new NotFoundError('workspace');
    return sub;
  }

  /** Moves a downgrade whose period has ended into the plan (in the caller's transaction). */
  async function applyDueDowngrade(trx: WriteTx, sub: SubscriptionsTable, t: number): Promise<SubscriptionsTable> {
    if (sub.pending_plan === null || sub.pending_from === null || Date.parse(sub.pending_from) > t) return sub;
    const now = isoAt(t);
    await repo.insertChange(trx, {
      id: newId('subscriptionChange', t),
      workspace_id: sub.workspace_id,
      kind: 'downgrade_applied',
      from_plan: sub.plan,
      to_plan: sub.pending_plan,
      period_start: sub.pending_from,
      effective_at: sub.pending_from,
      seconds_left: 0,
      period_seconds: 0,
      proration_cents: 0,
      created_at: now,
    });
    const next = { plan: sub.pending_plan, pending_plan: null, pending_from: null, updated_at: now };
    await repo.updateSubscription(trx, sub.workspace_id, next);
    return { ...sub, ...next };
  }

  function toInvoice(row: InvoicesTable, lines: InvoiceLine[]): Invoice {
    return {
      id: row.id,
      number: `INV-${row.number}`,
      workspace_id: row.workspace_id,
      status: row.status,
      period_start: isoAt(Date.parse(row.period_start)),
      period_end: isoAt(Date.parse(row.period_end)),
      plan: row.plan,
      billable_requests: Number(row.billable_requests),
      currency: 'usd',
      total_cents: Number(row.total_cents),
      lines,
      finalized_at: isoAt(Date.parse(row.finalized_at)),
      paid_at: row.paid_at === null ? null : isoAt(Date.parse(row.paid_at)),
      voided_at: row.voided_at === null ? null : isoAt(Date.parse(row.voided_at)),
    };
  }

  /** What `period` comes to with the changes and usage known now (the upcoming invoice, or the one being finalized). */
  async function compute(
    sub: SubscriptionsTable,
    changes: SubscriptionChangesTable[],
    period: Period,
    billable: number,
  ): Promise<UpcomingInvoice> {
    const { plan, lines, totalCents } = invoiceLines(period, eventsOf(sub, changes), sub.plan, billable, planOf);
    return {
      period_start: isoAt(period.start),
      period_end: isoAt(period.end),
      plan,
      billable_requests: billable,
      currency: 'usd',
      total_cents: totalCents,
      lines,
    };
  }

  /**
   * Finalizes `period`'s invoice unless it exists (another worker, an earlier run). The subscription
   * row is locked first, so two workers on PostgreSQL take turns and the second finds the invoice;
   * the unique (workspace, period) and (workspace, number) constraints make that hold regardless.
   */
  async function finalize(actor: Actor, workspaceId: string, period: Period): Promise<boolean> {
    const billable = await deps.usage.billableCount(workspaceId, period.start, period.end);
    return writeAs(actor, async (trx) => {
      const sub = await subscriptionOrThrow(trx, workspaceId, true);
      const last = await repo.lastInvoice(trx, workspaceId);
      if (last && Date.parse(last.period_start) >= period.start) return false;
      const changes = await repo.changes(trx, workspaceId);
      const inv = await compute(sub, changes, period, billable);
      const now = clock.now();
      const id = newId('invoice', now);
      const inserted = await repo.insertInvoice(
        trx,
        {
          id,
          workspace_id: workspaceId,
          number: (last ? Number(last.number) : 0) + 1,
          period_start: inv.period_start,
          period_end: inv.period_end,
          plan: inv.plan,
          billable_requests: inv.billable_requests,
          currency: 'usd',
          total_cents: inv.total_cents,
          status: 'open',
          finalized_at: isoAt(now),
          paid_at: null,
          voided_at: null,
        },
        inv.lines.map((l, i) => ({ invoice_id: id, position: i + 1, ...l })),
      );
      if (!inserted) return false;
      await deps.notify?.(trx, {
        type: 'invoice.issued',
        workspaceId,
        data: {
          invoice_id: id,
          number: `INV-${(last ? Number(last.number) : 0) + 1}`,
          plan: inv.plan,
          total_cents: inv.total_cents,
          currency: 'usd',
          period_start: inv.period_start,
          period_end: inv.period_end,
          at: isoAt(now),
        },
      });
      // A downgrade scheduled for this period's end takes effect with its invoice (if not already).
      await applyDueDowngrade(trx, sub, period.end);
      return true;
    });
  }

  const toLines = (
    rows: {
      kind: InvoiceLine['kind'];
      description: string;
      quantity: number | string;
      unit_price_cents: number | string;
      amount_cents: number | string;
    }[],
  ): InvoiceLine[] =>
    rows.map((l) => ({
      kind: l.kind,
      description: l.description,
      quantity: Number(l.quantity),
      unit_price_cents: Number(l.unit_price_cents),
      amount_cents: Number(l.amount_cents),
    }));

  const service = {
    plans: (): readonly Plan[] => deps.plans,

    /**
     * The hard cap of a workspace's plan at `t` (docs/billing.md#the-free-cap): its current period,
     * the cap (null: the plan has none), and the billable requests written so far in the period.
     */
    async capOf(
      workspaceId: string,
      t: number,
    ): Promise<{ limit: number | null; periodStart: number; periodEnd: number; billable: number } | null> {
      const sub = await repo.subscription(db, workspaceId);
      if (!sub) return null;
      const plan = planOf(planNow(sub, t));
      const period = periodAt(Date.parse(sub.anchor_at), t);
      // A pending downgrade ends the period's plan at its end anyway; the cap is re-read then.
      const limit = plan.hard_cap ? plan.included_requests : null;
      const billable = limit === null ? 0 : await deps.usage.billableCount(workspaceId, period.start, period.end);
      return { limit, periodStart: period.start, periodEnd: period.end, billable };
    },

    /**
     * Refuses one more resource or webhook in a live environment that is at its plan's limit: 403
     * plan_limit_exceeded naming the limit (docs/billing.md#plan-limits). Test environments are never
     * limited. Called first in the creating transaction; takes the workspace's row lock (then counts)
     * only when the plan has a limit, so two creations cannot both take the last place.
     */
    async checkCreate(trx: Db, tenant: Tenant, what: 'resources' | 'webhooks'): Promise<void> {
      if (!deps.enforceLimits || tenant.env !== 'live') return;
      const sub = await repo.subscription(trx, tenant.workspaceId);
      if (!sub) return;
      const plan = planOf(planNow(sub, clock.now()));
      const max = what === 'resources' ? plan.max_resources : plan.max_webhooks;
      if (max === null) return;
      await deps.lockWorkspace(trx, tenant.workspaceId);
      const n = await deps.counts[what](tenant, trx);
      if (n >= max) {
        const limit = what === 'resources' ? 'max_resources' : 'max_webhooks';
        throw new AppError(
          403,
          'plan_limit_exceeded',
          `Plan limit ${limit} reached: the ${plan.name} plan allows ${max} ${what} per environment and the live environment has ${n}. Delete one or move to a larger plan.`,
        );
      }
    },

    /** Starts a workspace on `free` in the transaction that creates it (workspaces module). */
    async start(trx: Db, workspaceId: string, createdAt: string): Promise<void> {
      planOf('free');
      await repo.insertSubscription(trx, {
        workspace_id: workspaceId,
        plan: 'free',
        anchor_at: createdAt,
        pending_plan: null,
        pending_from: null,
        started_at: createdAt,
        created_at: createdAt,
        updated_at: createdAt,
      });
    },

    /** GET /v1/billing/subscription: plan, period, usage so far and the upcoming invoice (docs/billing.md). */
    async subscription(p: Principal): Promise<Subscription> {
      return service.subscriptionOf(p.workspaceId);
    },

    /** The same for a workspace (CLI `billing show`). */
    async subscriptionOf(workspaceId: string): Promise<Subscription> {
      const sub = await subscriptionOrThrow(db, workspaceId);
      const now = clock.now();
      const period = periodAt(Date.parse(sub.anchor_at), now);
      const [changes, billable] = await Promise.all([
        repo.changes(db, workspaceId),
        deps.usage.billableCount(workspaceId, period.start, period.end),
      ]);
      const plan = planOf(planNow(sub, now));
      const pending =
        sub.pending_plan !== null && sub.pending_from !== null && Date.parse(sub.pending_from) > now
          ? { plan: sub.pending_plan, effective_at: isoAt(Date.parse(sub.pending_from)) }
          : null;
      return {
        workspace_id: workspaceId,
        plan,
        current_period: { start: isoAt(period.start), end: isoAt(period.end) },
        usage: { billable_requests: billable, included_requests: plan.included_requests },
        pending_change: pending,
        upcoming_invoice: await compute(sub, changes, period, billable),
      };
    },

    /**
     * Changes a workspace's plan in `trx` (docs/billing.md#plan-changes): a dearer plan at once, with
     * the base fee's difference prorated by the second; a cheaper one (or one of the same price) at
     * the period's end, refused with 409 downgrade_blocked when the live environment holds more
     * resources or webhooks than it allows; the current plan cancels a pending downgrade.
     */
    async setPlanIn(trx: WriteTx, workspaceId: string, planId: string): Promise<PlanChange> {
      const target = deps.plans.find((p) => p.id === planId);
      if (!target) {
        throw fieldError('plan', 'invalid_value', `plan must be one of ${deps.plans.map((p) => p.id).join(', ')}.`);
      }
      const t = clock.now();
      const sub = await applyDueDowngrade(trx, await subscriptionOrThrow(trx, workspaceId, true), t);
      const current = planOf(sub.plan);
      const period = periodAt(Date.parse(sub.anchor_at), t);
      const now = isoAt(t);
      const change = (kind: SubscriptionChangesTable['kind'], to: string, prorated = { s: 0, total: 0, cents: 0 }) =>
        repo.insertChange(trx, {
          id: newId('subscriptionChange', t),
          workspace_id: workspaceId,
          kind,
          from_plan: sub.plan,
          to_plan: to,
          period_start: isoAt(period.start),
          effective_at: kind === 'downgrade_scheduled' ? isoAt(period.end) : now,
          seconds_left: prorated.s,
          period_seconds: prorated.total,
          proration_cents: prorated.cents,
          created_at: now,
        });
      if (target.id === current.id) {
        if (sub.pending_plan === null) return { change: 'unchanged', plan: current.id };
        await change('downgrade_cancelled', current.id);
        await repo.updateSubscription(trx, workspaceId, { pending_plan: null, pending_from: null, updated_at: now });
        return { change: 'downgrade_cancelled', plan: current.id };
      }
      if (target.base_price_cents > current.base_price_cents) {
        const pr = proration(period, t, current.base_price_cents, target.base_price_cents);
        await change('upgrade', target.id, { s: pr.secondsLeft, total: pr.periodSeconds, cents: pr.amountCents });
        await repo.updateSubscription(trx, workspaceId, {
          plan: target.id,
          pending_plan: null,
          pending_from: null,
          updated_at: now,
        });
        return { change: 'upgraded', from: current.id, to: target.id, proration_cents: pr.amountCents };
      }
      const live: Tenant = { workspaceId, env: 'live' };
      const resources = await deps.counts.resources(live, trx);
      const webhooks = await deps.counts.webhooks(live, trx);
      const over: string[] = [];
      if (target.max_resources !== null && resources > target.max_resources) {
        over.push(`resources: ${resources} in the live environment, ${target.name} allows ${target.max_resources}`);
      }
      if (target.max_webhooks !== null && webhooks > target.max_webhooks) {
        over.push(`webhooks: ${webhooks} in the live environment, ${target.name} allows ${target.max_webhooks}`);
      }
      if (over.length > 0) {
        throw new ConflictError(
          'downgrade_blocked',
          `Cannot move to ${target.name}: ${over.join('; ')}. Delete the excess first.`,
        );
      }
      await change('downgrade_scheduled', target.id);
      await repo.updateSubscription(trx, workspaceId, {
        pending_plan: target.id,
        pending_from: isoAt(period.end),
        updated_at: now,
      });
      return { change: 'downgrade_scheduled', from: current.id, to: target.id, effective_at: isoAt(period.end) };
    },

    /**
     * The console's "Change plan" (POST /console/api/billing/plan): admins only (403 otherwise,
     * nothing changed), as the signed-in person, with setPlanIn's rules.
     */
    async changePlan(p: Principal, planId: string): Promise<PlanChangeOut> {
      requireAdmin(p);
      const c = await writeAs(p, (trx) => service.setPlanIn(trx, p.workspaceId, planId));
      switch (c.change) {
        case 'upgraded':
          return { change: c.change, from: c.from, to: c.to, proration_cents: c.proration_cents, effective_at: null };
        case 'downgrade_scheduled':
          return { change: c.change, from: c.from, to: c.to, proration_cents: null, effective_at: c.effective_at };
        default:
          return { change: c.change, from: null, to: c.plan, proration_cents: null, effective_at: null };
      }
    },

    /** setPlanIn in a transaction of its own, as `actor`. */
    setPlan(actor: Actor, workspaceId: string, planId: string): Promise<PlanChange> {
      return writeAs(actor, (trx) => service.setPlanIn(trx, workspaceId, planId));
    },

    /** GET /v1/billing/invoices: the caller's workspace's invoices, newest first, lines included. */
    async invoices(p: Principal, page: PageRequest): Promise<Page<Invoice>> {
      return service.invoicesOf(p.workspaceId, page);
    },

    async invoicesOf(workspaceId: string, page: PageRequest): Promise<Page<Invoice>> {
      const { rows, total, before } = await repo.listInvoices(db, workspaceId, page);
      const items = rows.slice(0, page.limit);
      const lines = await repo.lines(
        db,
        items.map((r) => r.id),
      );
      const invoices = items.map((r) => toInvoice(r, toLines(lines.filter((l) => l.invoice_id === r.id))));
      const offset = page.afterId === null ? page.offset : (page.afterOffset ?? before);
      const last = invoices.at(-1);
      return {
        items: invoices,
        total,
        limit: page.limit,
        offset,
        nextCursor: rows.length > page.limit && last ? encodeCursor(last.id, offset + invoices.length) : null,
      };
    },

    /** Marks an open invoice paid or void in `trx` (CLI); anything else is a 409 and changes nothing. */
    async settleIn(trx: WriteTx, invoiceId: string, status: 'paid' | 'void'): Promise<Invoice> {
      const row = isId('invoice', invoiceId) ? await repo.invoice(trx, invoiceId) : undefined;
      if (!row) throw new NotFoundError('invoice');
      if (!(await repo.settle(trx, invoiceId, status, isoAt(clock.now())))) {
        throw new ConflictError(
          'invoice_not_open',
          `Invoice INV-${row.number} is ${row.status}; only an open invoice can be marked ${status}.`,
        );
      }
      return service.invoice(invoiceId, trx);
    },

    /** One invoice with its lines (CLI); 404 for an unknown id. */
    async invoice(invoiceId: string, d: Db = db): Promise<Invoice> {
      const row = isId('invoice', invoiceId) ? await repo.invoice(d, invoiceId) : undefined;
      if (!row) throw new NotFoundError('invoice');
      return toInvoice(row, toLines(await repo.lines(d, [invoiceId])));
    },

    /**
     * The periodic job `billing-usage-notices`: for each workspace whose plan (in force now) has
     * included requests, records every threshold of USAGE_THRESHOLDS its current period's billable
     * requests have reached and not yet recorded, and notifies the admins once for the highest of
     * them, in that transaction. The primary key of usage_notices makes it once per period each,
     * also with two workers (the second finds the rows and writes nothing). Returns how many
     * notifications it wrote (one per workspace and run at most).
     */
    async notifyUsage(actor: Actor): Promise<number> {
      const t = clock.now();
      let notified = 0;
      for (const sub of await repo.allSubscriptions(db)) {
        const plan = deps.plans.find((p) => p.id === planNow(sub, t));
        const included = plan?.included_requests ?? null;
        if (!plan || included === null || included <= 0) continue;
        const period = periodAt(Date.parse(sub.anchor_at), t);
        const periodStart = isoAt(period.start);
        const billable = await deps.usage.billableCount(sub.workspace_id, period.start, period.end);
        // Integer arithmetic: 49.99 % is not 50 %.
        const reached = USAGE_THRESHOLDS.filter((th) => billable * 100 >= th * included);
        if (reached.length === 0) continue;
        const done = await repo.usageNotices(db, sub.workspace_id, periodStart);
        const fresh = reached.filter((th) => !done.includes(th));
        if (fresh.length === 0) continue;
        const wrote = await writeAs(actor, async (trx) => {
          const recorded: number[] = [];
          for (const threshold of fresh) {
            const row = {
              workspace_id: sub.workspace_id,
              period_start: periodStart,
              threshold,
              billable_requests: billable,
              included_requests: included,
              created_at: isoAt(t),
            };
            if (await repo.insertUsageNotice(trx, row)) recorded.push(threshold);
          }
          const top = recorded.at(-1);
          if (top === undefined) return false;
          await deps.notify?.(trx, {
            type: 'usage.threshold',
            workspaceId: sub.workspace_id,
            data: {
              threshold: top,
              billable_requests: billable,
              included_requests: included,
              plan: plan.id,
              plan_name: plan.name,
              hard_cap: plan.hard_cap,
              period_start: periodStart,
              period_end: isoAt(period.end),
              at: isoAt(t),
            },
          });
          return true;
        });
        if (wrote) notified++;
      }
      return notified;
    },

    /**
     * The periodic job (`scheduler:billing-invoices`): finalizes every period that ended at least an
     * hour ago and has no invoice, oldest first, per workspace. Returns how many it finalized.
     */
    async finalizeDue(actor: Actor): Promise<number> {
      const now = clock.now();
      let finalized = 0;
      for (const sub of await repo.allSubscriptions(db)) {
        const anchor = Date.parse(sub.anchor_at);
        const last = await repo.lastInvoice(db, sub.workspace_id);
        let index = last
          ? periodAt(anchor, Date.parse(last.period_start)).index + 1
          : periodAt(anchor, Date.parse(sub.started_at)).index;
        for (;;) {
          const period = periodByIndex(anchor, index);
          if (period.end + FINALIZE_AFTER_MS > now) break;
          if (!(await finalize(actor, sub.workspace_id, period))) break;
          finalized++;
          index++;
        }
      }
      return finalized;
    },
  };
  return service;
}
export type BillingService = ReturnType<typeof createBillingService>;
