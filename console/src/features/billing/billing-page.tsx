import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { ApiError } from '../../api/client';
import type { Plan, Subscription } from '../../api/types';
import { useCurrent, usePathTo } from '../../lib/session';
import { FormActions } from '../../ui/forms';
import { Badge, Dialog, PageHeader, Pager, Time } from '../../ui/primitives';
import { Empty, ErrorState, FormError, Loading, QueryView } from '../../ui/states';
import {
  count,
  money,
  useCard,
  useCardCheckout,
  useChangePlan,
  useInvoices,
  usePlans,
  useSubscription,
} from './billing-data';
import { InvoiceLines, STATUS_TONE } from './invoice-view';

/**
 * The billing page (docs/console.md#billing): plan, usage against the included requests,
 * the upcoming invoice, the invoice history, "Change plan". Admins only (billing:read).
 */
export default function BillingPage() {
  const { isAdmin } = useCurrent();
  return (
    <section>
      <PageHeader title="Billing">
        <p className="muted">The workspace's plan, this period's usage and invoices. Amounts in US dollars.</p>
      </PageHeader>
      {isAdmin ? (
        <AdminBilling />
      ) : (
        <Empty>
          <p>Only admins of this workspace can see and change its plan and invoices. Ask an admin.</p>
        </Empty>
      )}
    </section>
  );
}

function AdminBilling() {
  const sub = useSubscription();
  const [changing, setChanging] = useState(false);
  return (
    <>
      <QueryView query={sub} what="Loading the subscription">
        {({ data }) => (
          <>
            <PlanCard s={data} onChange={() => setChanging(true)} />
            <UsageCard s={data} />
            <section aria-labelledby="upcoming-title" className="card">
              <h2 id="upcoming-title">Upcoming invoice</h2>
              <p className="muted">
                This period so far (<Time iso={data.upcoming_invoice.period_start} /> –{' '}
                <Time iso={data.upcoming_invoice.period_end} />
                ), computed now; it is finalized an hour after the period ends.
              </p>
              <InvoiceLines invoice={data.upcoming_invoice} caption="Lines of the upcoming invoice" />
            </section>
            <ChangePlanDialog s={data} open={changing} onClose={() => setChanging(false)} />
          </>
        )}
      </QueryView>
      <CardSection />
      <InvoiceHistory />
    </>
  );
}

/**
 * The card invoices are charged to (payments with Stripe); entered on Stripe's page, never here. Nothing with
 * payments off. Stripe sends the browser back here with `?card=saved` (or `unchanged`), said once in a status line.
 */
function CardSection() {
  const card = useCard();
  const checkout = useCardCheckout();
  const [params] = useSearchParams();
  const back = params.get('card');
  if (card.isPending) return <Loading what="Loading the card" />;
  if (card.error || !card.data) {
    return (
      <section aria-labelledby="card-title" className="card">
        <h2 id="card-title">Card</h2>
        <ErrorState error={card.error} retry={() => card.refetch()} />
      </section>
    );
  }
  const info = card.data.data;
  if (!info.enabled) return null;
  return (
    <section aria-labelledby="card-title" className="card">
      <h2 id="card-title">Card</h2>
      {back === 'saved' || back === 'unchanged' ? (
        <p className="notice" role="status">
          {back === 'saved' ? 'Card saved: invoices are charged to it.' : 'The card was not changed.'}
        </p>
      ) : null}
      <p data-testid="card-on-file">
        {info.card
          ? `${info.card.brand} •••• ${info.card.last4}, expires ${info.card.exp_month}/${info.card.exp_year}`
          : 'No card yet: invoices are not charged, and a paid plan needs one.'}
      </p>
      <button
        type="button"
        disabled={checkout.isPending || checkout.isSuccess}
        onClick={() => checkout.mutate(undefined, { onSuccess: (r) => window.location.assign(r.data.url) })}
      >
        {checkout.isPending || checkout.isSuccess
          ? "Opening Stripe's page…"
          : info.card
            ? 'Replace card'
            : 'Add a card'}
      </button>
      <FormError error={checkout.error} />
    </section>
  );
}

function PlanCard({ s, onChange }: { s: Subscription; onChange: () => void }) {
  const p = s.plan;
  return (
    <section aria-labelledby="plan-title" className="card">
      <div className="section-header">
        <h2 id="plan-title">
          Plan: {p.name} <span className="muted">({money(p.base_price_cents)} a month)</span>
        </h2>
        <button type="button" onClick={onChange}>
          Change plan
        </button>
      </div>
      <dl className="props">
        <div>
          <dt>Included requests</dt>
          <dd>
            {count(p.included_requests)} a month
            {p.hard_cap ? ' (a hard cap: further live requests get 429)' : ''}
          </dd>
        </div>
        {p.overage_unit_requests !== null && p.overage_unit_price_cents !== null ? (
          <div>
            <dt>Overage</dt>
            <dd>
              {money(p.overage_unit_price_cents)} per further {count(p.overage_unit_requests)} requests, rounded up
            </dd>
          </div>
        ) : null}
        <div>
          <dt>Resources per environment</dt>
          <dd>{count(p.max_resources)}</dd>
        </div>
        <div>
          <dt>Webhooks per environment</dt>
          <dd>{count(p.max_webhooks)}</dd>
        </div>
      </dl>
      {s.pending_change ? (
        <p className="notice" role="status">
          Moving to <strong>{s.pending_change.plan}</strong> at <Time iso={s.pending_change.effective_at} /> (the end of
          this period).
        </p>
      ) : null}
    </section>
  );
}

/** Requests used against the included ones; shared with the overview's plan-usage card. */
export function UsageMeter({ s }: { s: Subscription }) {
  const { billable_requests: used, included_requests: included } = s.usage;
  const pct = included ? Math.min(100, (used / included) * 100) : null;
  return (
    <>
      <p className="big">
        {count(used)}
        <span className="muted"> / {count(included)}</span>
      </p>
      {included ? (
        <meter
          className="usage-meter"
          min={0}
          max={included}
          low={included * 0.8}
          high={included}
          optimum={0}
          value={Math.min(used, included)}
          aria-label={`Requests used: ${pct?.toFixed(1)} % of included`}
        />
      ) : null}
      <p className="muted">
        Billable live requests this period{pct !== null ? ` (${pct.toFixed(1)} %)` : ''}; the period ends{' '}
        <Time iso={s.current_period.end} />.
      </p>
    </>
  );
}

function UsageCard({ s }: { s: Subscription }) {
  return (
    <section aria-labelledby="usage-title" className="card">
      <h2 id="usage-title">Usage this period</h2>
      <UsageMeter s={s} />
    </section>
  );
}

function ChangePlanDialog({ s, open, onClose }: { s: Subscription; open: boolean; onClose: () => void }) {
  const plans = usePlans();
  const change = useChangePlan();
  const [chosen, setChosen] = useState('');
  const close = () => {
    change.reset();
    setChosen('');
    onClose();
  };
  const target = plans.data?.data.find((p) => p.id === chosen);
  const done = change.data?.data;
  return (
    <Dialog title={done ? 'Plan changed' : 'Change plan'} open={open} onClose={close}>
      {done ? (
        <>
          <p role="status">
            {done.change === 'upgraded'
              ? `Now on ${done.to}. ${money(done.proration_cents ?? 0)} for the rest of this period is on the upcoming invoice.`
              : done.change === 'downgrade_scheduled'
                ? `Moving to ${done.to} at the end of this period.`
                : done.change === 'downgrade_cancelled'
                  ? `The scheduled downgrade is cancelled; staying on ${done.to}.`
                  : `Already on ${done.to}; nothing changed.`}
          </p>
          <div className="actions">
            <button type="button" onClick={close}>
              Done
            </button>
          </div>
        </>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (chosen) change.mutate({ plan: chosen });
          }}
        >
          {plans.isPending ? (
            <Loading what="Loading plans" />
          ) : plans.error || !plans.data ? (
            <ErrorState error={plans.error} retry={() => plans.refetch()} />
          ) : (
            <fieldset>
              <legend>Plan</legend>
              {plans.data.data.map((p) => (
                <label key={p.id} className="check">
                  <input
                    type="radio"
                    name="plan"
                    value={p.id}
                    checked={chosen === p.id}
                    onChange={() => setChosen(p.id)}
                  />
                  {p.name} — {money(p.base_price_cents)} a month, {count(p.included_requests)} requests included
                  {p.id === s.plan.id ? ' (current)' : ''}
                </label>
              ))}
            </fieldset>
          )}
          {target ? <p className="notice">{whatHappens(s, target)}</p> : null}
          <FormError error={change.error} />
          {change.error instanceof ApiError && change.error.code === 'downgrade_blocked' ? (
            <p className="muted">Nothing was changed.</p>
          ) : null}
          <FormActions onCancel={close} submitLabel="Confirm plan change" busy={change.isPending} />
        </form>
      )}
    </Dialog>
  );
}

function whatHappens(s: Subscription, target: Plan): string {
  if (target.id === s.plan.id) {
    return s.pending_change ? 'Cancels the scheduled downgrade.' : 'This is the current plan: nothing changes.';
  }
  if (target.base_price_cents > s.plan.base_price_cents) {
    return `Upgrade now: ${target.name} applies at once, and the difference of the base fees for the rest of this period (prorated by the second) is added to the upcoming invoice.`;
  }
  return `Downgrade at the end of this period: you stay on ${s.plan.name} until then. Refused if the live environment holds more resources or webhooks than ${target.name} allows.`;
}

type InvoiceItem = NonNullable<ReturnType<typeof useInvoices>['data']>['pages'][number]['data'][number];

/** The card charge of an invoice (payments with Stripe): its state, each attempt, the next retry, refunds. */
function InvoicePayment({ invoice }: { invoice: InvoiceItem }) {
  if (invoice.payment_status === 'none' && invoice.refunded_cents === 0) return null;
  return (
    <div>
      <p>
        Payment: <strong>{invoice.payment_status.replace('_', ' ')}</strong>
        {invoice.paid_at ? (
          <>
            {' '}
            · paid <Time iso={invoice.paid_at} />
          </>
        ) : null}
        {invoice.next_payment_attempt_at ? (
          <>
            {' '}
            · next attempt <Time iso={invoice.next_payment_attempt_at} />
          </>
        ) : null}
        {invoice.refunded_cents > 0 ? <> · refunded {money(invoice.refunded_cents)}</> : null}
      </p>
      {invoice.payment_attempts.length > 0 ? (
        <ol aria-label={`Payment attempts of invoice ${invoice.number}`}>
          {invoice.payment_attempts.map((a) => (
            <li key={a.attempt}>
              <Time iso={a.at} />: {a.outcome.replace('_', ' ')}
              {a.decline_code ? ` (${a.decline_code})` : ''}
              {a.message ? ` — ${a.message}` : ''}
            </li>
          ))}
        </ol>
      ) : null}
    </div>
  );
}

function InvoiceHistory() {
  const invoices = useInvoices();
  const to = usePathTo();
  const items = invoices.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <section aria-labelledby="history-title">
      <h2 id="history-title">Invoices</h2>
      {invoices.isPending ? (
        <Loading what="Loading invoices" />
      ) : invoices.error || !invoices.data ? (
        <ErrorState error={invoices.error} retry={() => invoices.refetch()} />
      ) : items.length === 0 ? (
        <Empty>
          <p>No invoices yet. The first is issued an hour after the first period ends.</p>
        </Empty>
      ) : (
        <>
          {items.map((inv) => (
            <details key={inv.id} className="card invoice-item">
              <summary>
                <strong>{inv.number}</strong> · <Time iso={inv.period_start} /> – <Time iso={inv.period_end} /> ·{' '}
                {money(inv.total_cents)} <Badge tone={STATUS_TONE[inv.status]}>{inv.status}</Badge>
              </summary>
              <InvoiceLines invoice={inv} caption={`Lines of invoice ${inv.number}`} />
              <InvoicePayment invoice={inv} />
              <p>
                <Link to={to(`/settings/billing/invoices/${inv.id}`)}>Printable invoice {inv.number}</Link>
              </p>
            </details>
          ))}
          <Pager
            hasMore={invoices.hasNextPage}
            busy={invoices.isFetchingNextPage}
            onMore={() => invoices.fetchNextPage()}
          />
        </>
      )}
    </section>
  );
}
