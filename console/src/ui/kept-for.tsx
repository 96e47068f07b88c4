import type { List } from '../api/types';

/** How many days the records of a list are kept, as its first page's `meta.retention_days` says; undefined until loaded. */
export function retentionOf(list: { data?: { pages: List<unknown>[] } }): number | undefined {
  return list.data?.pages[0]?.meta.retention_days;
}

/** "Kept for 30 days." beside a list whose records a job deletes (docs/console.md); nothing until the list has loaded. */
export function KeptFor({ days }: { days: number | undefined }) {
  if (days === undefined) return null;
  return <span data-testid="kept-for">Kept for {days === 1 ? '1 day' : `${days} days`}.</span>;
}
