import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { ApiError, api, setCsrfToken } from '../../api/client';
import type { ConsoleSession, LinkInfo, SecondFactorNeeded } from '../../api/types';
import { SESSION_KEY } from '../../lib/session';
import { Field } from '../../ui/primitives';
import { ErrorState, FormError, Loading } from '../../ui/states';
import { AuthFrame, onSubmit } from './auth-form';

/** The page of every single-use link: first password, invite, reset. */
export default function SetPasswordPage() {
  const [params] = useSearchParams();
  const token = params.get('token') ?? '';
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [mismatch, setMismatch] = useState(false);
  // Whom the link is for, so the page names the account (an unknown or used link: the form's own error).
  const link = useQuery({
    queryKey: ['password-link', token],
    queryFn: () => api<{ data: LinkInfo }>('/password/link', { method: 'POST', body: { token } }),
    enabled: token !== '',
    retry: false,
  });
  // Setting the password signs the person in (docs/console.md#passwords-and-links): the answer is
  // sign-in's, so the console goes straight to the overview.
  const set = useMutation({
    mutationFn: (password: string) =>
      api<{ data: ConsoleSession | SecondFactorNeeded }>('/password/set', {
        method: 'POST',
        body: { token, password },
      }),
    onSuccess: (res) => {
      // A person with a second factor gives it at sign-in: a link proves the email, not the factor.
      if ('second_factor_required' in res.data) {
        navigate('/sign-in', {
          replace: true,
          state: { message: 'Password set. Sign in with it and your second factor.', email: link.data?.data.email },
        });
        return;
      }
      setCsrfToken(res.data.csrf_token);
      qc.setQueryData(SESSION_KEY, res.data);
      const first = res.data.memberships[0];
      if (res.data.stage === 'enrol') navigate('/two-factor-setup', { replace: true });
      else navigate(first ? `/w/${first.workspace_id}/live/overview` : '/sign-in', { replace: true });
    },
  });
  if (!token) {
    return (
      <AuthFrame title="Set your password">
        <p role="alert">
          This page needs the link you were sent. <Link to="/forgot-password">Ask for a new link</Link>.
        </p>
      </AuthFrame>
    );
  }
  if (link.isPending) {
    return (
      <AuthFrame title="Set your password">
        <Loading what="Checking your link" />
      </AuthFrame>
    );
  }
  if (link.error) {
    // A used, expired or unknown link cannot set a password: no form, only the ways to a new link.
    return (
      <AuthFrame title="Set your password">
        {link.error instanceof ApiError && link.error.code === 'invalid_link' ? (
          <DeadLink />
        ) : (
          <ErrorState error={link.error} retry={() => link.refetch()} />
        )}
      </AuthFrame>
    );
  }
  return (
    <AuthFrame title="Set your password">
      <p>
        For <strong>{link.data.data.email}</strong>.
      </p>
      <p>Choose a password of 10 to 200 characters. The link works once.</p>
      <form
        onSubmit={onSubmit((d) => {
          const a = String(d.get('password'));
          const ok = a === String(d.get('confirm'));
          setMismatch(!ok);
          if (ok) set.mutate(a);
        })}
      >
        <Field label="New password">
          {(id) => (
            <input id={id} name="password" type="password" autoComplete="new-password" minLength={10} required />
          )}
        </Field>
        <Field label="Repeat the password">
          {(id) => <input id={id} name="confirm" type="password" autoComplete="new-password" minLength={10} required />}
        </Field>
        {mismatch ? (
          <p className="form-error" role="alert">
            The two passwords differ.
          </p>
        ) : null}
        <FormError error={set.error} />
        <button type="submit" className="primary" disabled={set.isPending}>
          Set password
        </button>
      </form>
    </AuthFrame>
  );
}

/** What a used, expired or unknown link leads to: a new link, by email or from an admin, or sign-in. */
function DeadLink() {
  return (
    <>
      <p className="form-error" role="alert">
        This link has been used or has expired. A link works once: an invitation or first-password link for 7 days, a
        reset link for 1 hour.
      </p>
      <p>
        To set your password, get a new link: <Link to="/forgot-password">ask for one by email</Link>, or ask an admin
        of your workspace. Already set it? <Link to="/sign-in">Sign in</Link>.
      </p>
    </>
  );
}
