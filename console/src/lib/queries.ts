import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../api/client';
import type { List } from '../api/types';
import { useCurrent } from '../lib/session';

type Query = Record<string, string | undefined>;

/** A GET in the page's workspace and environment, cached per path and query. */
export function useScopedQuery<T>(path: string, query: Query = {}, enabled = true) {
  const { scope } = useCurrent();
  return useQuery({
    queryKey: [scope.ws, scope.env, path, query],
    queryFn: () => api<T>(path, { scope, query }),
    enabled,
  });
}

/** A cursor-paged list (docs/api.md#lists-and-paging) with "load more". */
export function useScopedList<T>(path: string, query: Query = {}, limit = 50) {
  const { scope } = useCurrent();
  return useInfiniteQuery({
    queryKey: [scope.ws, scope.env, path, query, 'list'],
    queryFn: ({ pageParam }) =>
      api<List<T>>(path, { scope, query: { ...query, limit: String(limit), cursor: pageParam } }),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.meta.next_cursor ?? undefined,
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
