import { type Static, Type } from '@sinclair/typebox';
import { PageQueryProps, Timestamp } from '../../kernel/schemas.js';

const Cents = Type.Integer({ description: 'US cents.' });
const Count = (description: string) => Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description });

export const PlanSchema = Type.Object(
  {
    id: Type.String({ examples: ['pro'] }),
    name: Type.String(),
    base_price_cents: Type.Integer({ minimum: 0, description: 'The monthly base fee in US cents.' }),
    included_requests: Count('Live requests included each period; null: unlimited.'),
    hard_cap: Type.Boolean({ description: 'Requests over the included ones are refused (429 quota_exceeded).' }),
    overage_unit_requests: Count('Overage is priced per this many requests, rounded up.'),
    overage_unit_price_cents: Count('Price of one overage unit in US cents.'),
    max_resources: Count('Most resources per environment; null: unlimited.'),
    max_webhooks: Count('Most webhooks per environment; null: unlimited.'),
  },
  { $id: 'Plan', title: 'Plan' },
);

/** A plan as the API answers it (the console's type). */
export type PlanOut = Static<typeof PlanSchema>;

export const InvoiceLineSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('base'), Type.Literal('proration'), Type.Literal('overage')]),
    description: Type.String(),
    quantity: Type.Integer({ minimum: 0 }),
    unit_price_cents: Cents,
    amount_cents: { ...Cents, description: 'quantity × unit_price_cents, in US cents.' },
  },
  { $id: 'InvoiceLine', title: 'InvoiceLine' },
);
export type InvoiceLine = Static<typeof InvoiceLineSchema>;

const InvoiceProps = {
  period_start: { ...Timestamp, description: 'Start of the billing period (00:00 UTC), inclusive.' },
  period_end: { ...Timestamp, description: 'End of the billing period, exclusive.' },
  plan: Type.String({ description: 'The plan in force at the end of the period (its overage prices apply).' }),
  billable_requests: Type.Integer({
    minimum: 0,
    description: 'Live requests answered with a status other than 429 and 5xx.',
  }),
  currency: Type.Literal('usd'),
  total_cents: Cents,
  lines: Type.Array(Type.Ref(InvoiceLineSchema)),
};

export const PaymentAttemptSchema = Type.Object(
  {
    attempt: Type.Integer({ minimum: 1 }),
    at: { ...Timestamp, description: 'When the attempt began.' },
    outcome: Type.Union(
      [
        Type.Literal('pending'),
        Type.Literal('processing'),
        Type.Literal('succeeded'),
        Type.Literal('failed'),
        Type.Literal('requires_action'),
      ],
      { description: 'pending: Stripe has not answered yet.' },
    ),
    decline_code: Type.Union([Type.String(), Type.Null()], { examples: ['insufficient_funds'] }),
    message: Type.Union([Type.String(), Type.Null()], { description: "The card issuer's reason, as Stripe gives it." }),
  },
  { $id: 'PaymentAttempt', title: 'PaymentAttempt' },
);
export type PaymentAttempt = Static<typeof PaymentAttemptSchema>;

export const InvoiceSchema = Type.Object(
  {
    id: Type.String({ examples: ['inv_01JD0000000000000000000000'] }),
    number: Type.String({ examples: ['INV-3'], description: 'Sequential per workspace.' }),
    workspace_id: Type.String(),
    status: Type.Union(
      [Type.Literal('open'), Type.Literal('paid'), Type.Literal('void'), Type.Literal('uncollectible')],
      {
        description: 'uncollectible: every charge of the dunning schedule failed.',
      },
    ),
    ...InvoiceProps,
    finalized_at: Timestamp,
    paid_at: Type.Union([Timestamp, Type.Null()]),
    voided_at: Type.Union([Timestamp, Type.Null()]),
    payment_status: Type.Union(
      [
        Type.Literal('none'),
        Type.Literal('processing'),
        Type.Literal('succeeded'),
        Type.Literal('failed'),
        Type.Literal('requires_action'),
      ],
      { description: 'Where the card charge stands (payments with Stripe); none: never charged.' },
    ),
    payment_attempts: Type.Array(Type.Ref(PaymentAttemptSchema), { description: 'Oldest first.' }),
    next_payment_attempt_at: Type.Union([Timestamp, Type.Null()], { description: 'The next retry (dunning).' }),
    refunded_cents: { ...Cents, minimum: 0, description: 'Refunded so far, in US cents.' },
  },
  { $id: 'Invoice', title: 'Invoice' },
);
export type Invoice = Static<typeof InvoiceSchema>;

export const UpcomingInvoiceSchema = Type.Object(InvoiceProps, {
  $id: 'UpcomingInvoice',
  title: 'UpcomingInvoice',
  description: 'What the current period would be invoiced if it ended now, computed on demand; never stored.',
});
export type UpcomingInvoice = Static<typeof UpcomingInvoiceSchema>;

export const SubscriptionSchema = Type.Object(
  {
    workspace_id: Type.String(),
    plan: Type.Ref(PlanSchema),
    current_period: Type.Object({ start: Timestamp, end: Timestamp }),
    usage: Type.Object({
      billable_requests: Type.Integer({ minimum: 0, description: 'So far this period (flushed every few seconds).' }),
      included_requests: Count('From the plan; null: unlimited.'),
    }),
    pending_change: Type.Union([
      Type.Object({
        plan: Type.String(),
        effective_at: { ...Timestamp, description: 'The end of the current period.' },
      }),
      Type.Null(),
    ]),
    upcoming_invoice: Type.Ref(UpcomingInvoiceSchema),
  },
  { $id: 'Subscription', title: 'Subscription' },
);
export type Subscription = Static<typeof SubscriptionSchema>;

export const ListInvoicesQuery = Type.Object({ ...PageQueryProps }, { additionalProperties: false });

/** POST /console/api/billing/plan (the console's "Change plan"). */
export const ChangePlanBody = Type.Object(
  { plan: Type.String({ minLength: 1, maxLength: 64, description: 'The plan to move to.' }) },
  { additionalProperties: false },
);

/** What a plan change did (docs/billing.md#plan-changes). */
export const PlanChangeSchema = Type.Object({
  change: Type.Union([
    Type.Literal('upgraded'),
    Type.Literal('downgrade_scheduled'),
    Type.Literal('downgrade_cancelled'),
    Type.Literal('unchanged'),
  ]),
  /** The plan in force before (upgrades, scheduled downgrades); null otherwise. */
  from: Type.Union([Type.String(), Type.Null()]),
  /** The plan moved to (or kept). */
  to: Type.String(),
  proration_cents: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
  effective_at: Type.Union([Timestamp, Type.Null()]),
});
export type PlanChangeOut = Static<typeof PlanChangeSchema>;

/** The workspace's card as Stripe saved it: what may be shown, nothing else. */
export const CardSchema = Type.Object({
  brand: Type.String({ examples: ['visa'] }),
  last4: Type.String({ examples: ['4242'] }),
  exp_month: Type.Integer({ minimum: 1, maximum: 12 }),
  exp_year: Type.Integer(),
});

/** GET /console/api/billing/card/return: Checkout's session id. */
export const CardReturnQuery = Type.Object(
  {
    session_id: Type.String({ minLength: 1, maxLength: 255, pattern: '^cs_[A-Za-z0-9_]+$' }),
    /** The workspace, for the browser's navigation back from Checkout (it sends no X-Workspace-Id header). */
    ws: Type.Optional(Type.String({ pattern: '^ws_[0-9A-Za-z]{1,64}$' })),
  },
  { additionalProperties: false },
);
