import type { Invoice, List, Plan, PlanChangeOut, Subscription } from '../../api/types';
import { useScopedList, useScopedMutation, useScopedQuery } from '../../lib/queries';

/** `4900` → `$49.00` (integer US cents, docs/billing.md). */
export function money(cents: number): string {
  const sign = cents < 0 ? '−' : '';
  const abs = Math.abs(cents);
  return `${sign}$${Math.floor(abs / 100).toLocaleString('en-US')}.${String(abs % 100).padStart(2, '0')}`;
}

/** `1000000` → `1,000,000`; null → `unlimited`. */
export const count = (n: number | null) => (n === null ? 'unlimited' : n.toLocaleString('en-US'));

/** The workspace's subscription with the upcoming invoice (admins: billing:read). */
export const useSubscription = (enabled = true) =>
  useScopedQuery<{ data: Subscription }>('/v1/billing/subscription', {}, enabled);
/** Finalized invoices, newest first. */
export const useInvoices = () => useScopedList<Invoice>('/v1/billing/invoices', {}, 24, { order: null });
export const usePlans = () => useScopedQuery<{ data: Plan[] }>('/billing/plans');
/** "Change plan" (admins): refreshes the subscription and invoices after it. */
export const useChangePlan = () =>
  useScopedMutation<{ plan: string }, { data: PlanChangeOut }>('POST', '/billing/plan');

/** The workspace's card (payments with Stripe): brand, last 4 digits and expiry only. */
export interface CardInfo {
  enabled: boolean;
  card: { brand: string; last4: string; exp_month: number; exp_year: number } | null;
}
export const useCard = () => useScopedQuery<{ data: CardInfo }>('/billing/card');
/** "Add a card" / "Replace card": the URL of Stripe's hosted page, where the browser goes next. */
export const useCardCheckout = () =>
  useScopedMutation<undefined, { data: { url: string } }>('POST', '/billing/card/checkout');

export type { Invoice, List };
