import { useMutation } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { Link } from 'react-router';
import { api } from '../../api/client';
import type { ConsoleSession } from '../../api/types';
import { FormError, Loading } from '../../ui/states';
import { AuthFrame } from './auth-form';
import { useOpenSession } from './sign-in';

/**
 * Where the identity provider sends the browser back (the redirect URI to register): the page posts the
 * answer to the server, which checks it and opens the session; a refusal is said here, with what to do.
 */
export default function SsoCallbackPage() {
  const open = useOpenSession();
  const sent = useRef(false);
  const finish = useMutation({
    mutationFn: (query: string) => api<{ data: ConsoleSession }>('/sso/callback', { method: 'POST', body: { query } }),
    onSuccess: (res) => open(res.data),
  });
  useEffect(() => {
    if (sent.current) return;
    sent.current = true;
    const query = window.location.search.slice(1);
    // The code leaves the address bar (and the history) at once.
    window.history.replaceState(null, '', '/console/sso/callback');
    finish.mutate(query || 'state=');
  }, [finish]);
  return (
    <AuthFrame title="Single sign-on">
      {finish.error ? (
        <>
          <FormError error={finish.error} />
          <p>
            <Link to="/sign-in">Back to sign-in</Link>
          </p>
        </>
      ) : (
        <Loading what="Signing you in" />
      )}
    </AuthFrame>
  );
}
