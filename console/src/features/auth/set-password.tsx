import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { api } from '../../api/client';
import { Field } from '../../ui/primitives';
import { FormError } from '../../ui/states';
import { AuthFrame, onSubmit } from './auth-form';

/** The page of every single-use link: first password, invite, reset. */
export default function SetPasswordPage() {
  const [params] = useSearchParams();
  const token = params.get('token') ?? '';
  const navigate = useNavigate();
  const [mismatch, setMismatch] = useState(false);
  const set = useMutation({
    mutationFn: (password: string) =>
      api<{ data: { email: string } }>('/password/set', { method: 'POST', body: { token, password } }),
    onSuccess: (res) =>
      navigate('/sign-in', { state: { message: `Password set for ${res.data.email}. Sign in with it now.` } }),
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
  return (
    <AuthFrame title="Set your password">
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
