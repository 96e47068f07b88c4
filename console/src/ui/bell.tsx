import { NavLink } from 'react-router';
import { useUnreadCount } from '../lib/notifications';

/** The header's bell: a link to the feed named with the unread count. */
export function NotificationBell({ to }: { to: string }) {
  const count = useUnreadCount();
  const n = count.data ?? 0;
  const label = count.data === undefined ? 'Notifications' : `Notifications, ${n} unread`;
  return (
    <NavLink to={to} className="bell" aria-label={label} title={label}>
      {/* An inline bell: no emoji font is needed to show it. */}
      <svg
        aria-hidden="true"
        width="16"
        height="16"
        viewBox="0 0 24 24"
        fill="none"
        stroke="currentColor"
        strokeWidth="2"
      >
        <path d="M18 8a6 6 0 0 0-12 0c0 7-3 9-3 9h18s-3-2-3-9" />
        <path d="M13.7 21a2 2 0 0 1-3.4 0" />
      </svg>
      {n > 0 ? (
        <span className="bell-count" aria-hidden="true">
          {n > 99 ? '99+' : n}
        </span>
      ) : null}
    </NavLink>
  );
}
