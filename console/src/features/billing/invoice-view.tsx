import type { Invoice, UpcomingInvoice } from '../../api/types';
import { Badge, Time } from '../../ui/primitives';
import { count, money } from './billing-data';

const STATUS_TONE = { open: 'warn', paid: 'good', void: 'neutral', uncollectible: 'bad' } as const;

/** An invoice's lines and total as a table (the billing page, the printable invoice). */
export function InvoiceLines({ invoice, caption }: { invoice: Invoice | UpcomingInvoice; caption: string }) {
  return (
    // Scrolls sideways on a phone: focusable, so the keyboard can scroll it too (as DataTable's frame).
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard (WCAG 2.1.1)
    <section className="table-wrap" tabIndex={0} aria-label={caption}>
      <table>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Description</th>
            <th scope="col" className="num">
              Quantity
            </th>
            <th scope="col" className="num">
              Unit price
            </th>
            <th scope="col" className="num">
              Amount
            </th>
          </tr>
        </thead>
        <tbody>
          {invoice.lines.length === 0 ? (
            <tr>
              <td colSpan={4} className="muted">
                No charges.
              </td>
            </tr>
          ) : (
            invoice.lines.map((l) => (
              <tr key={`${l.kind}-${l.description}`} data-kind={l.kind}>
                <td>{l.description}</td>
                <td className="num">{count(l.quantity)}</td>
                <td className="num">{money(l.unit_price_cents)}</td>
                <td className="num">{money(l.amount_cents)}</td>
              </tr>
            ))
          )}
        </tbody>
        <tfoot>
          <tr>
            <th scope="row" colSpan={3}>
              Total (USD)
            </th>
            <td className="num">
              <strong>{money(invoice.total_cents)}</strong>
            </td>
          </tr>
        </tfoot>
      </table>
    </section>
  );
}

/** A finalized invoice as a page of its own: what prints (docs/console.md#billing). */
export function InvoiceDocument({ invoice, workspaceName }: { invoice: Invoice; workspaceName: string }) {
  return (
    <article className="invoice-print" aria-labelledby="invoice-title">
      <header className="invoice-head">
        <h1 id="invoice-title">Invoice {invoice.number}</h1>
        <Badge tone={STATUS_TONE[invoice.status]}>{invoice.status}</Badge>
      </header>
      <dl className="props">
        <div>
          <dt>Workspace</dt>
          <dd>
            {workspaceName} ({invoice.workspace_id})
          </dd>
        </div>
        <div>
          <dt>Invoice id</dt>
          <dd>{invoice.id}</dd>
        </div>
        <div>
          <dt>Period</dt>
          <dd>
            <Time iso={invoice.period_start} /> – <Time iso={invoice.period_end} />
          </dd>
        </div>
        <div>
          <dt>Plan</dt>
          <dd>{invoice.plan}</dd>
        </div>
        <div>
          <dt>Billable requests</dt>
          <dd>{count(invoice.billable_requests)}</dd>
        </div>
        <div>
          <dt>Issued</dt>
          <dd>
            <Time iso={invoice.finalized_at} />
          </dd>
        </div>
        {invoice.paid_at ? (
          <div>
            <dt>Paid</dt>
            <dd>
              <Time iso={invoice.paid_at} />
            </dd>
          </div>
        ) : null}
        {invoice.voided_at ? (
          <div>
            <dt>Voided</dt>
            <dd>
              <Time iso={invoice.voided_at} />
            </dd>
          </div>
        ) : null}
      </dl>
      <InvoiceLines invoice={invoice} caption={`Lines of invoice ${invoice.number}`} />
    </article>
  );
}

export { STATUS_TONE };
