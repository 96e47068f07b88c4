import { NavLink } from 'react-router';
import { useUnreadCount } from '../lib/notifications';

/** The header's bell: a link to the feed named with the unread count. */
export function NotificationBell({ to }: { to: string }) {
  const count = useUnreadCount();
  const n = count.data ?? 0;
  const label = count.data === undefined ? 'Notifications' : `Notifications, ${n} unread`;
  return (
    <NavLink to={to} className="bell" aria-label={label} title={label}>
      <span aria-hidden="true">🔔</span>
      {n > 0 ? (
        <span className="bell-count" aria-hidden="true">
          {n > 99 ? '99+' : n}
        </span>
      ) : null}
    </NavLink>
  );
}
