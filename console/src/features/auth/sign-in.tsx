import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Link, Navigate, useLocation, useNavigate } from 'react-router';
import { api, setCsrfToken } from '../../api/client';
import type { ConsoleSession } from '../../api/types';
import { SESSION_KEY, useSessionQuery } from '../../lib/session';
import { Field } from '../../ui/primitives';
import { FormError } from '../../ui/states';
import { AuthFrame, onSubmit } from './auth-form';

export default function SignInPage() {
  const session = useSessionQuery();
  const navigate = useNavigate();
  const location = useLocation();
  const qc = useQueryClient();
  const signIn = useMutation({
    mutationFn: (body: { email: string; password: string }) =>
      api<{ data: ConsoleSession }>('/session', { method: 'POST', body }),
    onSuccess: (res) => {
      setCsrfToken(res.data.csrf_token);
      qc.setQueryData(SESSION_KEY, res.data);
      const from = (location.state as { from?: string } | null)?.from;
      const first = res.data.memberships[0];
      navigate(from ?? (first ? `/w/${first.workspace_id}/live/overview` : '/'), { replace: true });
    },
  });
  const first = session.data?.memberships[0];
  if (session.data && first && !signIn.isPending)
    return <Navigate to={`/w/${first.workspace_id}/live/overview`} replace />;
  // After a password is set from a link, its email is filled in already.
  const { message, email } = (location.state as { message?: string; email?: string } | null) ?? {};
  return (
    <AuthFrame title="Sign in">
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
          {(id) => <input id={id} name="email" type="email" autoComplete="username" required defaultValue={email} />}
        </Field>
        <Field label="Password">
          {(id) => <input id={id} name="password" type="password" autoComplete="current-password" required />}
        </Field>
        <FormError error={signIn.error} />
        <button type="submit" className="primary" disabled={signIn.isPending}>
          {signIn.isPending ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p>
        <Link to="/forgot-password">Forgot your password?</Link>
      </p>
    </AuthFrame>
  );
}
