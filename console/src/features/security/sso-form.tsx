import type { Role, SsoSettingsOut, SsoState, User } from '../../api/types';
import { useScopedList, useScopedMutation } from '../../lib/queries';
import { Field } from '../../ui/primitives';
import { FormError, fieldErrorOf } from '../../ui/states';

/** The workspace's single sign-on settings; the client secret is written, never shown. */
export function SsoForm({ state }: { state: SsoState }) {
  const save = useScopedMutation<Record<string, unknown>, { data: SsoSettingsOut }>('PUT', '/sso');
  const off = useScopedMutation<undefined, unknown>('DELETE', '/sso');
  const admins = (useScopedList<User>('/v1/users', {}, 100).data?.pages.flatMap((p) => p.data) ?? []).filter(
    (u) => u.role === 'admin',
  );
  const s = state.settings;
  const err = (f: string) => fieldErrorOf(save.error, f);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        const d = new FormData(e.currentTarget);
        const secret = String(d.get('client_secret') ?? '');
        const required = d.get('required') === 'on';
        save.mutate({
          issuer: String(d.get('issuer') ?? '').trim(),
          client_id: String(d.get('client_id') ?? '').trim(),
          ...(secret ? { client_secret: secret } : {}),
          allowed_domains: String(d.get('allowed_domains') ?? '')
            .split(/[\s,]+/)
            .filter(Boolean),
          default_role: String(d.get('default_role')) as Role,
          required,
          break_glass_user_id: String(d.get('break_glass_user_id') ?? '') || null,
        });
      }}
    >
      <p>
        Register this redirect URI at your identity provider: <code className="wrap">{state.redirect_uri}</code>.
        Scopes: <code>openid email profile</code>.
      </p>
      <Field
        label="Issuer URL"
        error={err('issuer')}
        hint="As the provider publishes it, e.g. https://login.example.com"
      >
        {(id, d) => <input id={id} name="issuer" type="url" required defaultValue={s?.issuer} {...d} />}
      </Field>
      <Field label="Client ID" error={err('client_id')}>
        {(id, d) => <input id={id} name="client_id" required defaultValue={s?.client_id} {...d} />}
      </Field>
      <Field
        label="Client secret"
        error={err('client_secret')}
        hint={s ? 'Kept and never shown again; leave empty to keep it.' : 'Never shown again once saved.'}
      >
        {(id, d) => <input id={id} name="client_secret" type="password" autoComplete="off" required={!s} {...d} />}
      </Field>
      <Field label="Allowed email domains" error={err('allowed_domains')} hint="Separated by commas, e.g. example.com">
        {(id, d) => (
          <input id={id} name="allowed_domains" required defaultValue={s?.allowed_domains.join(', ')} {...d} />
        )}
      </Field>
      <Field label="Role for people who arrive first through SSO">
        {(id) => (
          <select id={id} name="default_role" defaultValue={s?.default_role ?? 'viewer'}>
            <option value="viewer">viewer</option>
            <option value="member">member</option>
            <option value="admin">admin</option>
          </select>
        )}
      </Field>
      <label className="check">
        <input type="checkbox" name="required" defaultChecked={s?.required} /> SSO required: refuse password sign-in for
        this workspace, except for the break-glass admin
      </label>
      <Field label="Break-glass admin (keeps the password)" error={err('break_glass_user_id')}>
        {(id, d) => (
          <select id={id} name="break_glass_user_id" defaultValue={s?.break_glass_user_id ?? ''} {...d}>
            <option value="">None</option>
            {admins.map((a) => (
              <option key={a.id} value={a.id}>
                {a.email}
              </option>
            ))}
          </select>
        )}
      </Field>
      <FormError
        error={save.error}
        attached={['issuer', 'client_id', 'client_secret', 'allowed_domains', 'break_glass_user_id']}
      />
      {save.isSuccess ? <p role="status">Single sign-on saved.</p> : null}
      <button type="submit" className="primary" disabled={save.isPending}>
        Save single sign-on
      </button>{' '}
      {s ? (
        <button type="button" onClick={() => off.mutate(undefined)} disabled={off.isPending}>
          Turn off single sign-on
        </button>
      ) : null}
      <FormError error={off.error} />
    </form>
  );
}
