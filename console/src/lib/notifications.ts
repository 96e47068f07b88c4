import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../api/client';
import type { NotificationFeed } from '../api/types';
import { useCurrent } from './session';

/** Query keys of the feed: under the workspace, so any write there refreshes the count too. */
const feedKey = (ws: string) => [ws, 'notifications'];

/** The unread count for the bell, refreshed every 30 s and after any write in the workspace. */
export function useUnreadCount() {
  const { scope } = useCurrent();
  return useQuery({
    queryKey: [...feedKey(scope.ws), 'count'],
    queryFn: () => api<NotificationFeed>('/notifications', { scope, query: { limit: '1' } }),
    select: (d) => d.meta.unread_count,
    refetchInterval: 30_000,
  });
}

/** The feed, newest first, 20 at a time with "load more". */
export function useFeed() {
  const { scope } = useCurrent();
  return useInfiniteQuery({
    queryKey: [...feedKey(scope.ws), 'list'],
    queryFn: ({ pageParam }) =>
      api<NotificationFeed>('/notifications', { scope, query: { limit: '20', cursor: pageParam } }),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.meta.next_cursor ?? undefined,
  });
}

/** Marks some (`ids`) or all notifications read; the feed and the bell refresh. */
export function useMarkRead() {
  const { scope } = useCurrent();
  const qc = useQueryClient();
  return useMutation({
    mutationFn: (body: { ids: string[] } | { all: true }) =>
      api<{ data: { unread_count: number } }>('/notifications/read', { method: 'POST', scope, body }),
    onSuccess: () => qc.invalidateQueries({ queryKey: feedKey(scope.ws) }),
  });
}
