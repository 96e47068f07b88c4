import type { ReactNode } from 'react';
import type { List } from '../api/types';
import { Pager } from './primitives';
import { Empty, QueryView } from './states';

/** A column heading; `{ hidden }` is read by screen readers only (an actions column). */
export type Column = string | { hidden: string };

/**
 * A table with a caption for screen readers and its column headings; `children` are the rows. `stacked`: on a
 * phone each row becomes a card of its cells, each under its column's name (the cells' `data-label`), instead
 * of a table scrolling sideways.
 */
export function DataTable({
  caption,
  columns,
  stacked = false,
  children,
}: {
  caption: string;
  columns: Column[];
  stacked?: boolean;
  children: ReactNode;
}) {
  return (
    // A table wider than a phone scrolls inside this frame; the frame is focusable so the keyboard can scroll it too.
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard (WCAG 2.1.1)
    <section className={stacked ? 'table-wrap stacked' : 'table-wrap'} tabIndex={0} aria-label={caption}>
      <table>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) =>
              typeof c === 'string' ? (
                <th key={c} scope="col">
                  {c}
                </th>
              ) : (
                <th key={c.hidden} scope="col">
                  <span className="visually-hidden">{c.hidden}</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </section>
  );
}

/** What ListTable needs of a TanStack infinite query over a paged list. */
interface PagedQuery<T> {
  isPending: boolean;
  error: unknown;
  data: { pages: List<T>[] } | undefined;
  refetch: () => unknown;
  hasNextPage: boolean;
  isFetchingNextPage: boolean;
  fetchNextPage: () => unknown;
}

/**
 * A paged list as a table: its loading, error and empty states, the rows of every page loaded so
 * far, and "Load older" while the server has more.
 */
export function ListTable<T>({
  list,
  what,
  empty,
  caption,
  columns,
  showTotal = false,
  moreLabel = 'Load older',
  stacked = false,
  children,
}: {
  list: PagedQuery<T>;
  what: string;
  empty: ReactNode;
  caption: string;
  columns: Column[];
  showTotal?: boolean;
  /** The pager's button: lists are newest first, so the next page is older. */
  moreLabel?: string;
  /** Rows as cards on a phone (DataTable's `stacked`); each cell names its column in `data-label`. */
  stacked?: boolean;
  children: (rows: T[]) => ReactNode;
}) {
  return (
    <QueryView query={list} what={what}>
      {(d) => {
        const rows = d.pages.flatMap((p) => p.data);
        if (rows.length === 0) return <Empty>{empty}</Empty>;
        return (
          <>
            {showTotal ? <p className="muted">{d.pages[0]?.meta.total ?? rows.length} in all</p> : null}
            <DataTable caption={caption} columns={columns} stacked={stacked}>
              {children(rows)}
            </DataTable>
            <Pager
              hasMore={list.hasNextPage}
              busy={list.isFetchingNextPage}
              onMore={() => list.fetchNextPage()}
              label={moreLabel}
            />
          </>
        );
      }}
    </QueryView>
  );
}
