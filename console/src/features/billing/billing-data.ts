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

export type { Invoice, List };
