import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../../api/client';
import type { RecoveryCodes, TotpEnrolment, TwoFactorStatus } from '../../api/types';
import { SESSION_KEY } from '../../lib/session';
import { Field } from '../../ui/primitives';
import { FormError, fieldErrorOf } from '../../ui/states';
import { RecoveryCodesOnce } from './recovery-codes';

export const TWO_FACTOR_KEY = ['two-factor'] as const;

/** Two-factor codes from an authenticator app: set up (QR code, secret, a code), recovery codes, turn off. */
export function TotpSection({ status }: { status: TwoFactorStatus }) {
  const qc = useQueryClient();
  const refresh = () => {
    qc.invalidateQueries({ queryKey: TWO_FACTOR_KEY });
    qc.invalidateQueries({ queryKey: SESSION_KEY });
  };
  const [codes, setCodes] = useState<string[] | null>(null);
  const start = useMutation({
    mutationFn: () => api<{ data: TotpEnrolment }>('/two-factor/totp', { method: 'POST' }),
  });
  const confirm = useMutation({
    mutationFn: (code: string) =>
      api<{ data: RecoveryCodes }>('/two-factor/totp/confirm', { method: 'POST', body: { code } }),
    onSuccess: (res) => {
      setCodes(res.data.recovery_codes);
      start.reset();
      refresh();
    },
  });
  const off = useMutation({
    mutationFn: (body: { password: string; code: string }) => api('/two-factor/totp/disable', { method: 'POST', body }),
    onSuccess: refresh,
  });
  const regenerate = useMutation({
    mutationFn: (body: { password: string; code: string }) =>
      api<{ data: RecoveryCodes }>('/two-factor/recovery-codes', { method: 'POST', body }),
    onSuccess: (res) => {
      setCodes(res.data.recovery_codes);
      refresh();
    },
  });
  const enrolment = start.data?.data;
  return (
    <section className="card" aria-labelledby="totp-title">
      <h2 id="totp-title">Two-factor codes</h2>
      {codes ? <RecoveryCodesOnce codes={codes} onDone={() => setCodes(null)} /> : null}
      {status.totp_enabled ? (
        <>
          <p>
            <strong>On.</strong> Sign-in asks for a code from your authenticator app after your password.{' '}
            {status.recovery_codes_left} of 10 recovery codes left.
          </p>
          <ReauthForm
            title="New recovery codes"
            hint="The old recovery codes stop working."
            submitLabel="Make new recovery codes"
            mutation={regenerate}
          />
          <ReauthForm
            title="Turn off two-factor codes"
            hint="Your recovery codes stop working too."
            submitLabel="Turn off two-factor codes"
            mutation={off}
            danger
          />
        </>
      ) : enrolment ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            confirm.mutate(String(new FormData(e.currentTarget).get('code') ?? '').trim());
          }}
        >
          <p>Scan this QR code with your authenticator app, or type the key below into it.</p>
          <img
            className="qr"
            src={`data:image/svg+xml;utf8,${encodeURIComponent(enrolment.qr_svg)}`}
            alt="QR code of your two-factor key"
            width={200}
            height={200}
          />
          <p>
            Key: <code className="totp-secret">{enrolment.secret}</code>
          </p>
          <Field label="Code from the app" error={fieldErrorOf(confirm.error, 'code')}>
            {(id, described) => (
              <input
                id={id}
                name="code"
                inputMode="numeric"
                autoComplete="one-time-code"
                pattern="[0-9]{6}"
                required
                {...described}
              />
            )}
          </Field>
          <FormError error={confirm.error} attached={['code']} />
          <button type="submit" className="primary" disabled={confirm.isPending}>
            Turn on two-factor codes
          </button>
        </form>
      ) : (
        <>
          <p>Off. Add a code from an authenticator app to your password, so a stolen password is not enough.</p>
          <FormError error={start.error} />
          <button type="button" className="primary" onClick={() => start.mutate()} disabled={start.isPending}>
            Set up two-factor codes
          </button>
        </>
      )}
    </section>
  );
}

/** A change that needs the password and a current code (or a recovery code). */
function ReauthForm({
  title,
  hint,
  submitLabel,
  mutation,
  danger,
}: {
  title: string;
  hint: string;
  submitLabel: string;
  mutation: {
    mutate: (b: { password: string; code: string }, o?: { onSuccess?: () => void }) => void;
    error: unknown;
    isPending: boolean;
  };
  danger?: boolean;
}) {
  return (
    <details>
      <summary>{title}</summary>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const d = new FormData(e.currentTarget);
          const form = e.currentTarget;
          mutation.mutate(
            { password: String(d.get('password')), code: String(d.get('code')).trim() },
            { onSuccess: () => form.reset() },
          );
        }}
      >
        <p className="muted">{hint}</p>
        <Field label="Password" error={fieldErrorOf(mutation.error, 'password')}>
          {(id, described) => (
            <input id={id} name="password" type="password" autoComplete="current-password" required {...described} />
          )}
        </Field>
        <Field label="Code from the app, or a recovery code" error={fieldErrorOf(mutation.error, 'code')}>
          {(id, described) => <input id={id} name="code" autoComplete="one-time-code" required {...described} />}
        </Field>
        <FormError error={mutation.error} attached={['password', 'code']} />
        <button type="submit" className={danger ? 'danger' : ''} disabled={mutation.isPending}>
          {submitLabel}
        </button>
      </form>
    </details>
  );
}
