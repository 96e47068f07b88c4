import { useQueryClient } from '@tanstack/react-query';
import { Navigate, useNavigate } from 'react-router';
import { api } from '../../api/client';
import { CurrentProvider, SESSION_KEY, useSessionQuery } from '../../lib/session';
import { ErrorState, Loading } from '../../ui/states';
import { TwoFactorCards } from './two-factor-card';

/**
 * The one page a session reaches while a workspace requires a second factor the person lacks
 * (docs/sign-in.md#the-second-factor-policy); once one is added, the overview.
 */
export default function EnrolPage() {
  const session = useSessionQuery();
  const navigate = useNavigate();
  const qc = useQueryClient();
  if (session.isPending) return <Loading what="Loading the console" />;
  if (session.error) return <ErrorState error={session.error} retry={() => session.refetch()} />;
  if (!session.data) return <Navigate to="/sign-in" replace />;
  const first = session.data.memberships[0];
  if (session.data.stage !== 'enrol') {
    return <Navigate to={first ? `/w/${first.workspace_id}/live/overview` : '/'} replace />;
  }
  const value = first
    ? {
        session: session.data,
        membership: first,
        scope: { ws: first.workspace_id, env: 'live' as const },
        isAdmin: first.role === 'admin',
        canWriteResources: first.role !== 'viewer',
        timeZone: first.timezone || 'UTC',
      }
    : null;
  const body = (
    <main className="auth wide" id="main">
      <p className="brand">Workspace Service</p>
      <h1>Set up a second factor</h1>
      <p>
        A workspace you belong to requires a second factor. Set up two-factor codes or add a passkey to open the
        console.
      </p>
      <TwoFactorCards />
      <button
        type="button"
        onClick={async () => {
          await api('/session', { method: 'DELETE' }).catch(() => undefined);
          qc.clear();
          qc.setQueryData(SESSION_KEY, null);
          navigate('/sign-in');
        }}
      >
        Sign out
      </button>
    </main>
  );
  return value ? <CurrentProvider value={value}>{body}</CurrentProvider> : body;
}
