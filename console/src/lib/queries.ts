import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../api/client';
import type { List } from '../api/types';
import { useCurrent } from '../lib/session';

type Query = Record<string, string | undefined>;

/** How often a live page asks again (docs/console.md#live-updates). */
export const LIVE_INTERVAL_MS = 5000;

/**
 * `live`: asked again every LIVE_INTERVAL_MS while the tab is visible (TanStack Query stops the
 * interval while the document is hidden, and asks again when it is shown).
 */
const liveOptions = (live: boolean) =>
  live ? { refetchInterval: LIVE_INTERVAL_MS, refetchIntervalInBackground: false } : {};

/** A GET in the page's workspace and environment, cached per path and query. */
export function useScopedQuery<T>(path: string, query: Query = {}, enabled = true, opts: { live?: boolean } = {}) {
  const { scope } = useCurrent();
  return useQuery({
    queryKey: [scope.ws, scope.env, path, query],
    queryFn: () => api<T>(path, { scope, query }),
    enabled,
    ...liveOptions(Boolean(opts.live) && enabled),
  });
}

/**
 * A cursor-paged list (docs/api.md#lists-and-paging), newest first (`order=desc`) unless `order`
 * is null (a list without that parameter), with "Load older". A live list asks again for every
 * page loaded so far; each page's cursor is worked out afresh from the page before it, so a new
 * record moves the rows down without a gap or a duplicate.
 */
export function useScopedList<T>(
  path: string,
  query: Query = {},
  limit = 50,
  /** `live` as a function: asked again only while it holds of the rows loaded (an export still being written). */
  opts: { order?: 'desc' | 'asc' | null; live?: boolean | ((rows: T[]) => boolean) } = {},
) {
  const { scope } = useCurrent();
  const order = opts.order === undefined ? 'desc' : opts.order;
  const full = order ? { ...query, order } : query;
  const live = opts.live;
  return useInfiniteQuery({
    queryKey: [scope.ws, scope.env, path, full, 'list'],
    queryFn: ({ pageParam }) =>
      api<List<T>>(path, { scope, query: { ...full, limit: String(limit), cursor: pageParam } }),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.meta.next_cursor ?? undefined,
    ...(typeof live === 'function'
      ? {
          refetchInterval: (q: { state: { data?: { pages: List<T>[] } } }) =>
            live(q.state.data?.pages.flatMap((p) => p.data) ?? []) ? LIVE_INTERVAL_MS : false,
          refetchIntervalInBackground: false,
        }
      : liveOptions(Boolean(live))),
  });
}

/** A write in the page's scope; refreshes every cached read of this workspace and environment after it. */
export function useScopedMutation<TBody, TOut>(method: string, path: string | ((b: TBody) => string)) {
  const { scope } = useCurrent();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: TBody) =>
      api<TOut>(typeof path === 'function' ? path(body) : path, {
        method,
        scope,
        body: method === 'DELETE' || body === undefined ? undefined : stripRouting(body),
      }),
    onSuccess: () => qc.invalidateQueries({ queryKey: [scope.ws] }),
  });
}

/** Fields starting with `_` route the call (ids in the path) and are not sent. */
function stripRouting(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) if (!k.startsWith('_')) out[k] = v;
  return Object.keys(out).length === 0 ? undefined : out;
}
