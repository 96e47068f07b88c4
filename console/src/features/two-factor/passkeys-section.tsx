import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../../api/client';
import type { Passkey } from '../../api/types';
import { SESSION_KEY } from '../../lib/session';
import { ConfirmButton, Field, Time } from '../../ui/primitives';
import { Empty, FormError } from '../../ui/states';
import { TWO_FACTOR_KEY } from './totp-section';
import { createPasskey, passkeyProblem, passkeysSupported } from './webauthn';

/** Passkeys: sign in without a password, or as the second factor; add, rename, remove. */
export function PasskeysSection({ passkeys }: { passkeys: Passkey[] }) {
  const qc = useQueryClient();
  const refresh = () => {
    qc.invalidateQueries({ queryKey: TWO_FACTOR_KEY });
    qc.invalidateQueries({ queryKey: SESSION_KEY });
  };
  const add = useMutation({
    mutationFn: async (name: string) => {
      const response = await createPasskey().catch((e) => {
        throw passkeyProblem(e);
      });
      return api('/passkeys', { method: 'POST', body: { name, response } });
    },
    onSuccess: refresh,
  });
  const rename = useMutation({
    mutationFn: ({ id, name }: { id: string; name: string }) =>
      api(`/passkeys/${id}`, { method: 'PATCH', body: { name } }),
    onSuccess: refresh,
  });
  const [renaming, setRenaming] = useState<string | null>(null);
  return (
    <section className="card" aria-labelledby="passkeys-title">
      <h2 id="passkeys-title">Passkeys</h2>
      <p>
        A passkey signs you in without your password (your device checks it is you), or stands as your second factor.
      </p>
      {passkeys.length === 0 ? (
        <Empty>No passkeys yet.</Empty>
      ) : (
        <ul className="plain">
          {passkeys.map((p) => (
            <li key={p.id}>
              {renaming === p.id ? (
                <form
                  className="inline"
                  onSubmit={(e) => {
                    e.preventDefault();
                    const name = String(new FormData(e.currentTarget).get('name') ?? '').trim();
                    rename.mutate({ id: p.id, name }, { onSuccess: () => setRenaming(null) });
                  }}
                >
                  <Field label={`New name for ${p.name}`}>
                    {(id) => <input id={id} name="name" defaultValue={p.name} maxLength={60} required />}
                  </Field>
                  <button type="submit">Save name</button>
                </form>
              ) : (
                <>
                  <strong>{p.name}</strong> · added <Time iso={p.created_at} /> · last used{' '}
                  <Time iso={p.last_used_at} />{' '}
                  <button type="button" onClick={() => setRenaming(p.id)} aria-label={`Rename ${p.name}`}>
                    Rename
                  </button>{' '}
                  <ConfirmButton
                    label="Remove"
                    ariaLabel={`Remove ${p.name}`}
                    title="Remove this passkey?"
                    message={`"${p.name}" will no longer sign you in.`}
                    confirmLabel="Remove passkey"
                    onConfirm={async () => {
                      await api(`/passkeys/${p.id}`, { method: 'DELETE' });
                      refresh();
                    }}
                  />
                </>
              )}
            </li>
          ))}
        </ul>
      )}
      <FormError error={rename.error} />
      {passkeysSupported() ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const form = e.currentTarget;
            const name = String(new FormData(form).get('name') ?? '').trim() || 'Passkey';
            add.mutate(name, { onSuccess: () => form.reset() });
          }}
        >
          <Field label="Passkey name" hint="For example the device it lives on.">
            {(id, described) => <input id={id} name="name" maxLength={60} placeholder="My laptop" {...described} />}
          </Field>
          <FormError error={add.error} />
          {add.isSuccess ? <p role="status">Passkey added.</p> : null}
          <button type="submit" className="primary" disabled={add.isPending}>
            {add.isPending ? 'Waiting for your device…' : 'Add a passkey'}
          </button>
        </form>
      ) : (
        <p className="muted">This browser cannot use passkeys.</p>
      )}
    </section>
  );
}
