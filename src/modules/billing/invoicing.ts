import type { Db } from '../../db/dialect.js';
import type { InvoicePaymentAttemptsTable, InvoicesTable } from '../../db/types.js';
import { isoAt } from '../../kernel/clock.js';
import { ConflictError, NotFoundError } from '../../kernel/errors.js';
import { isId, newId } from '../../kernel/ids.js';
import type { Principal } from '../../kernel/principal.js';
import { encodeCursor, type Page, type PageRequest } from '../../lib/paging.js';
import type { Unit } from '../../platform/unit-of-work.js';
import { changesOf } from '../audit/changes.js';
import { billingRepository as repo } from './billing.repository.js';
import type { Invoice, InvoiceLine } from './billing.schemas.js';
import type { BillingDeps } from './billing-deps.js';
import { invoiceData, PAYMENT_STATE } from './payments.js';
import { paymentsRepository as paymentsRepo } from './payments.repository.js';
import { type Period, periodAt, periodByIndex } from './periods.js';
import type { SubscriptionState } from './subscription-state.js';

/** An invoice is finalized this long after its period ends (docs/billing.md#invoices): late flushes of usage land first. */
export const FINALIZE_AFTER_MS = 60 * 60_000;

/** Invoices (docs/billing.md#invoices): finalization (the `billing-invoices` job), listing, paid and void. */
export function createInvoicing(deps: BillingDeps, state: SubscriptionState) {
  const { db, clock } = deps;
  const { subscriptionOrThrow, applyDueDowngrade, compute } = state;

  function toInvoice(row: InvoicesTable, lines: InvoiceLine[], attempts: InvoicePaymentAttemptsTable[]): Invoice {
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
      payment_status: row.payment_status,
      payment_attempts: attempts.map((a) => ({
        attempt: Number(a.attempt),
        at: isoAt(Date.parse(a.started_at)),
        outcome: a.outcome,
        decline_code: a.decline_code,
        message: a.message,
      })),
      next_payment_attempt_at: row.next_charge_at === null ? null : isoAt(Date.parse(row.next_charge_at)),
      refunded_cents: Number(row.refunded_cents),
    };
  }

  /**
   * Finalizes `period`'s invoice unless it exists (another worker, an earlier run). The subscription
   * row is locked first, so two workers on PostgreSQL take turns and the second finds the invoice;
   * the unique (workspace, period) and (workspace, number) constraints make that hold regardless.
   */
  async function finalize(u: Unit, workspaceId: string, period: Period): Promise<boolean> {
    const billable = await deps.usage.billableCount(workspaceId, period.start, period.end);
    return u.run(async (c) => {
      const { trx, audit } = c;
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
      audit.record({
        action: 'invoice.finalized',
        workspaceId,
        target: { type: 'invoice', id },
        env: null,
        changes: changesOf(null, {
          number: `INV-${(last ? Number(last.number) : 0) + 1}`,
          status: 'open',
          plan: inv.plan,
          period_start: inv.period_start,
          period_end: inv.period_end,
          total_cents: inv.total_cents,
        }),
      });
      await c.emit({
        type: 'billing.notice',
        notice: {
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
        },
      });
      // A downgrade scheduled for this period's end takes effect with its invoice (if not already).
      await applyDueDowngrade(trx, audit, sub, period.end);
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
    /** GET /v1/billing/invoices: the caller's workspace's invoices, newest first, lines included. */
    async invoices(p: Principal, page: PageRequest): Promise<Page<Invoice>> {
      return service.invoicesOf(p.workspaceId, page);
    },

    async invoicesOf(workspaceId: string, page: PageRequest): Promise<Page<Invoice>> {
      const { rows, total, before } = await repo.listInvoices(db, workspaceId, page);
      const items = rows.slice(0, page.limit);
      const ids = items.map((r) => r.id);
      const lines = await repo.lines(db, ids);
      const attempts = await paymentsRepo.attemptsOf(db, ids);
      const invoices = items.map((r) =>
        toInvoice(
          r,
          toLines(lines.filter((l) => l.invoice_id === r.id)),
          attempts.filter((a) => a.invoice_id === r.id),
        ),
      );
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

    /** A batch of the workspace's invoices after `after` (an id), oldest first, with their lines: an export's walk. */
    async exportBatch(workspaceId: string, after: string | null, limit: number) {
      const rows = await repo.exportBatch(db, workspaceId, after, limit);
      const ids = rows.map((r) => r.id);
      const lines = ids.length === 0 ? [] : await repo.lines(db, ids);
      const attempts = ids.length === 0 ? [] : await paymentsRepo.attemptsOf(db, ids);
      const invoices = rows.map((r) =>
        toInvoice(
          r,
          toLines(lines.filter((l) => l.invoice_id === r.id)),
          attempts.filter((a) => a.invoice_id === r.id),
        ),
      );
      return { rows: invoices, next: rows.at(-1)?.id ?? null };
    },

    /** Marks an open invoice paid or void (CLI); anything else is a 409 and changes nothing. */
    settle(u: Unit, invoiceId: string, status: 'paid' | 'void'): Promise<Invoice> {
      return u.run(async (c) => {
        const { trx, audit } = c;
        const row = isId('invoice', invoiceId) ? await repo.invoice(trx, invoiceId) : undefined;
        if (!row) throw new NotFoundError('invoice');
        const at = isoAt(clock.now());
        if (!(await repo.settle(trx, invoiceId, status, at))) {
          throw new ConflictError(
            'invoice_not_open',
            `Invoice INV-${row.number} is ${row.status}; only an open invoice can be marked ${status}.`,
          );
        }
        audit.record({
          action: status === 'paid' ? 'invoice.marked_paid' : 'invoice.voided',
          workspaceId: row.workspace_id,
          target: { type: 'invoice', id: row.id },
          env: null,
          changes: { status: { before: row.status, after: status } },
        });
        await c.emit({
          type: 'invoice.settled',
          workspaceId: row.workspace_id,
          status,
          data: invoiceData(row, at),
        });
        return service.invoice(invoiceId, trx);
      }, PAYMENT_STATE);
    },

    /** One invoice with its lines (CLI); 404 for an unknown id. */
    async invoice(invoiceId: string, d: Db = db): Promise<Invoice> {
      const row = isId('invoice', invoiceId) ? await repo.invoice(d, invoiceId) : undefined;
      if (!row) throw new NotFoundError('invoice');
      return toInvoice(row, toLines(await repo.lines(d, [invoiceId])), await paymentsRepo.attemptsOf(d, [invoiceId]));
    },

    /**
     * The periodic job (`scheduler:billing-invoices`): finalizes every period that ended at least an
     * hour ago and has no invoice, oldest first, per workspace. Returns how many it finalized.
     */
    async finalizeDue(u: Unit): Promise<number> {
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
          if (!(await finalize(u, sub.workspace_id, period))) break;
          finalized++;
          index++;
        }
      }
      return finalized;
    },
  };
  return service;
}
