import { Link } from 'react-router';
import { useCurrent } from '../lib/session';

/** "History": the audit log filtered to one target (a resource, key, member, endpoint); admins only, as the log is. */
export function HistoryLink({ targetId, label }: { targetId: string; label: string }) {
  const { isAdmin, scope } = useCurrent();
  if (!isAdmin) return null;
  return (
    <Link
      to={`/w/${scope.ws}/${scope.env}/settings/audit-log?target=${encodeURIComponent(targetId)}`}
      aria-label={`History of ${label}`}
    >
      History
    </Link>
  );
}
