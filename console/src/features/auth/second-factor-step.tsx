import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../../api/client';
import type { ConsoleSession, SecondFactorNeeded } from '../../api/types';
import { Field } from '../../ui/primitives';
import { FormError } from '../../ui/states';
import { passkeyProblem, signWithPasskey } from '../two-factor/webauthn';
import { AuthFrame, onSubmit } from './auth-form';

/** The second step of a password sign-in: a code from the app, a recovery code, or a passkey. */
export function SecondFactorStep({
  pending,
  onSession,
  onRestart,
}: {
  pending: SecondFactorNeeded;
  onSession: (s: ConsoleSession) => void;
  onRestart: () => void;
}) {
  const hasTotp = pending.methods.includes('totp');
  const [recovery, setRecovery] = useState(!hasTotp);
  const send = useMutation({
    mutationFn: (proof: Record<string, unknown>) =>
      api<{ data: ConsoleSession }>('/session/second-factor', {
        method: 'POST',
        body: { token: pending.token, ...proof },
      }),
    onSuccess: (res) => onSession(res.data),
  });
  const passkey = useMutation({
    mutationFn: async () => {
      const response = await signWithPasskey('/session/second-factor/passkey-options', { token: pending.token }).catch(
        (e) => {
          throw passkeyProblem(e);
        },
      );
      return api<{ data: ConsoleSession }>('/session/second-factor', {
        method: 'POST',
        body: { token: pending.token, passkey: response },
      });
    },
    onSuccess: (res) => onSession(res.data),
  });
  return (
    <AuthFrame title="Two-factor check">
      {hasTotp ? (
        <form
          onSubmit={onSubmit((d) => {
            const value = String(d.get('code') ?? '').trim();
            send.mutate(recovery ? { recovery_code: value } : { code: value });
          })}
        >
          {recovery ? (
            <Field
              label="Recovery code"
              hint="One of the codes you saved when you set up two-factor codes; each works once."
            >
              {(id, described) => (
                <input id={id} name="code" autoComplete="off" required {...described} key="recovery" />
              )}
            </Field>
          ) : (
            <Field label="Code from your authenticator app">
              {(id) => (
                <input
                  id={id}
                  name="code"
                  inputMode="numeric"
                  autoComplete="one-time-code"
                  pattern="[0-9]{6}"
                  required
                  key="totp"
                />
              )}
            </Field>
          )}
          <FormError error={send.error} />
          <button type="submit" className="primary" disabled={send.isPending}>
            Verify
          </button>{' '}
          <button type="button" onClick={() => setRecovery((r) => !r)}>
            {recovery ? 'Use a code from the app' : 'Use a recovery code'}
          </button>
        </form>
      ) : null}
      {pending.methods.includes('passkey') ? (
        <>
          <FormError error={passkey.error} />
          <button
            type="button"
            className={hasTotp ? '' : 'primary'}
            onClick={() => passkey.mutate()}
            disabled={passkey.isPending}
          >
            {passkey.isPending ? 'Waiting for your passkey…' : 'Use a passkey'}
          </button>
        </>
      ) : null}
      <p>
        <button type="button" className="link" onClick={onRestart}>
          Start again
        </button>
      </p>
    </AuthFrame>
  );
}
