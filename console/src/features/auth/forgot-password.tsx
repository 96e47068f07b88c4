import { useMutation } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../../api/client';
import { Field } from '../../ui/primitives';
import { FormError } from '../../ui/states';
import { AuthFrame, onSubmit } from './auth-form';

export default function ForgotPasswordPage() {
  const forgot = useMutation({
    mutationFn: (email: string) => api('/password/forgot', { method: 'POST', body: { email } }),
  });
  return (
    <AuthFrame title="Forgot your password">
      {forgot.isSuccess ? (
        <p role="status">
          If this email belongs to a member, the request has been noted. Until email delivery is set up, ask your
          administrator for a reset link: they make one, valid for one hour, with <code>wsvc users reset-link</code>.
        </p>
      ) : (
        <form onSubmit={onSubmit((d) => forgot.mutate(String(d.get('email'))))}>
          <Field label="Email">
            {(id) => <input id={id} name="email" type="email" autoComplete="username" required />}
          </Field>
          <FormError error={forgot.error} />
          <button type="submit" className="primary" disabled={forgot.isPending}>
            Send reset link
          </button>
        </form>
      )}
      <p>
        <Link to="/sign-in">Back to sign in</Link>
      </p>
    </AuthFrame>
  );
}
