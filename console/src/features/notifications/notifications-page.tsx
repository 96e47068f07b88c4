import type { NotificationItem } from '../../api/types';
import { useFeed, useMarkRead } from '../../lib/notifications';
import { Badge, PageHeader, Pager, Time } from '../../ui/primitives';
import { Empty, ErrorState, FormError, Loading } from '../../ui/states';

const CATEGORY: Record<string, string> = {
  security: 'Security',
  webhooks: 'Webhooks',
  usage: 'Usage',
  billing: 'Billing',
};

/** The in-app feed (docs/notifications.md#the-feed): newest first, unread marked, kept 90 days. */
export default function NotificationsPage() {
  const feed = useFeed();
  const markRead = useMarkRead();
  const unread = feed.data?.pages[0]?.meta.unread_count ?? 0;
  const items = feed.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <section>
      <PageHeader
        title="Notifications"
        actions={
          <button
            type="button"
            onClick={() => markRead.mutate({ all: true })}
            disabled={unread === 0 || markRead.isPending}
          >
            Mark all as read
          </button>
        }
      >
        <p className="muted">
          Security changes, webhook endpoint health, usage and invoices in this workspace, kept 90 days.{' '}
          {feed.data ? `${unread} unread.` : null}
        </p>
      </PageHeader>
      <FormError error={markRead.error} />
      {feed.isPending ? (
        <Loading what="Loading notifications" />
      ) : feed.error || !feed.data ? (
        <ErrorState error={feed.error} retry={() => feed.refetch()} />
      ) : items.length === 0 ? (
        <Empty>
          <p>No notifications yet.</p>
        </Empty>
      ) : (
        <>
          <ul className="feed" aria-label="Notifications">
            {items.map((n) => (
              <FeedEntry key={n.id} n={n} onRead={() => markRead.mutate({ ids: [n.id] })} busy={markRead.isPending} />
            ))}
          </ul>
          <Pager hasMore={feed.hasNextPage} busy={feed.isFetchingNextPage} onMore={() => feed.fetchNextPage()} />
        </>
      )}
    </section>
  );
}

function FeedEntry({ n, onRead, busy }: { n: NotificationItem; onRead: () => void; busy: boolean }) {
  const unread = n.read_at === null;
  return (
    <li className={unread ? 'feed-item unread' : 'feed-item'}>
      <div>
        <p className="feed-title">
          {unread ? <span className="visually-hidden">Unread: </span> : null}
          {n.title}
        </p>
        <p className="muted">
          <Badge tone={n.category === 'security' ? 'warn' : 'neutral'}>{CATEGORY[n.category] ?? n.category}</Badge>{' '}
          <Time iso={n.created_at} />
        </p>
      </div>
      {unread ? (
        <button type="button" onClick={onRead} disabled={busy} aria-label={`Mark as read: ${n.title}`}>
          Mark as read
        </button>
      ) : (
        <span className="muted">Read</span>
      )}
    </li>
  );
}
