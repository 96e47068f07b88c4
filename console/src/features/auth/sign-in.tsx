import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, Navigate, useLocation, useNavigate } from 'react-router';
import { api, setCsrfToken } from '../../api/client';
import type { ConsoleSession, SecondFactorNeeded } from '../../api/types';
import { SESSION_KEY, useSessionQuery } from '../../lib/session';
import { Field } from '../../ui/primitives';
import { FormError } from '../../ui/states';
import { passkeyProblem, passkeysSupported, signWithPasskey } from '../two-factor/webauthn';
import { AuthFrame, onSubmit } from './auth-form';
import { SecondFactorStep } from './second-factor-step';

/** Where a new session goes: the enrolment page while a second factor is required, else the page asked for. */
export function useOpenSession() {
  const navigate = useNavigate();
  const location = useLocation();
  const qc = useQueryClient();
  return (s: ConsoleSession) => {
    setCsrfToken(s.csrf_token);
    qc.setQueryData(SESSION_KEY, s);
    const from = (location.state as { from?: string } | null)?.from;
    const first = s.memberships[0];
    if (s.stage === 'enrol') navigate('/two-factor-setup', { replace: true });
    else navigate(from ?? (first ? `/w/${first.workspace_id}/live/overview` : '/'), { replace: true });
  };
}

export default function SignInPage() {
  const session = useSessionQuery();
  const location = useLocation();
  const open = useOpenSession();
  const [pending, setPending] = useState<SecondFactorNeeded | null>(null);
  const [email, setEmail] = useState((location.state as { email?: string } | null)?.email ?? '');
  const signIn = useMutation({
    mutationFn: (body: { email: string; password: string }) =>
      api<{ data: ConsoleSession | SecondFactorNeeded }>('/session', { method: 'POST', body }),
    onSuccess: (res) => {
      if ('second_factor_required' in res.data) setPending(res.data);
      else open(res.data);
    },
  });
  const passkey = useMutation({
    mutationFn: async () => {
      const response = await signWithPasskey('/session/passkey/options').catch((e) => {
        throw passkeyProblem(e);
      });
      return api<{ data: ConsoleSession }>('/session/passkey', { method: 'POST', body: { response } });
    },
    onSuccess: (res) => open(res.data),
  });
  // A fresh install has no workspace to sign in to yet: say how to create the first.
  const firstRun = useQuery({
    queryKey: ['first-run'],
    queryFn: () => api<{ data: { has_workspace: boolean } }>('/first-run'),
  });
  const first = session.data?.memberships[0];
  if (session.data?.stage === 'enrol') return <Navigate to="/two-factor-setup" replace />;
  if (session.data && first && !signIn.isPending && !pending) {
    return <Navigate to={`/w/${first.workspace_id}/live/overview`} replace />;
  }
  if (pending) return <SecondFactorStep pending={pending} onSession={open} onRestart={() => setPending(null)} />;
  const { message } = (location.state as { message?: string } | null) ?? {};
  return (
    <AuthFrame title="Sign in">
      {firstRun.data?.data.has_workspace === false ? (
        <p className="notice" role="status" data-testid="first-run">
          No workspace exists yet. On the server, create the first with{' '}
          <code>npx wsvc workspaces create --name &lt;name&gt; --admin-email &lt;you@example.com&gt;</code> and open the
          console link it prints to choose your password.
        </p>
      ) : null}
      {message ? (
        <p className="notice" role="status">
          {message}
        </p>
      ) : null}
      <form
        onSubmit={onSubmit((d) =>
          signIn.mutate({ email: String(d.get('email')), password: String(d.get('password')) }),
        )}
      >
        <Field label="Email">
          {(id) => (
            <input
              id={id}
              name="email"
              type="email"
              autoComplete="username webauthn"
              required
              value={email}
              onChange={(e) => setEmail(e.target.value)}
            />
          )}
        </Field>
        <SsoOffer email={email} />
        <Field label="Password">
          {(id) => <input id={id} name="password" type="password" autoComplete="current-password" required />}
        </Field>
        <FormError error={signIn.error} />
        <button type="submit" className="primary" disabled={signIn.isPending}>
          {signIn.isPending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      {passkeysSupported() ? (
        <>
          <FormError error={passkey.error} />
          <button type="button" onClick={() => passkey.mutate()} disabled={passkey.isPending}>
            {passkey.isPending ? 'Waiting for your passkey…' : 'Sign in with a passkey'}
          </button>
        </>
      ) : null}
      <p>
        <Link to="/forgot-password">Forgot your password?</Link>
      </p>
    </AuthFrame>
  );
}

/** "Continue with SSO" once the email's domain is one a workspace signs in with single sign-on. */
function SsoOffer({ email }: { email: string }) {
  const domain = /^[^@\s]+@([^@\s]+\.[^@\s]+)$/.exec(email.trim())?.[1]?.toLowerCase();
  const found = useQuery({
    queryKey: ['sso-discover', domain],
    enabled: Boolean(domain),
    staleTime: 60_000,
    queryFn: () =>
      api<{ data: { workspace_id: string; workspace_name: string }[] }>('/sso/discover', {
        method: 'POST',
        body: { email: `someone@${domain}` },
      }),
  });
  const start = useMutation({
    mutationFn: (workspace_id: string) =>
      api<{ data: { authorization_url: string } }>('/sso/start', { method: 'POST', body: { workspace_id, email } }),
    onSuccess: (res) => window.location.assign(res.data.authorization_url),
  });
  const list = domain ? (found.data?.data ?? []) : [];
  if (list.length === 0) return null;
  return (
    <div className="sso-offer">
      {list.map((w) => (
        <button
          key={w.workspace_id}
          type="button"
          className="primary"
          onClick={() => start.mutate(w.workspace_id)}
          disabled={start.isPending}
        >
          {list.length > 1 ? `Continue with SSO (${w.workspace_name})` : 'Continue with SSO'}
        </button>
      ))}
      <FormError error={start.error} />
    </div>
  );
}
