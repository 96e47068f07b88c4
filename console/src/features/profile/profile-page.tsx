import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { useNavigate } from 'react-router';
import { api } from '../../api/client';
import type { SessionInfo, User } from '../../api/types';
import { SESSION_KEY, useCurrent } from '../../lib/session';
import { formatTime, timeZones } from '../../lib/time';
import { ConfirmButton, Field, PageHeader, Time } from '../../ui/primitives';
import { Empty, FormError, QueryView } from '../../ui/states';
import { NotificationPreferences } from '../notifications/preferences';
import { TwoFactorCards } from '../two-factor/two-factor-card';

export default function ProfilePage() {
  return (
    <section>
      <PageHeader title="Profile" />
      <ProfileForm />
      <PasswordForm />
      <TwoFactorCards />
      <NotificationPreferences />
      <Sessions />
      <DeleteAccount />
    </section>
  );
}

function ProfileForm() {
  const { membership, scope } = useCurrent();
  const qc = useQueryClient();
  const zones = useMemo(timeZones, []);
  const [search, setSearch] = useState('');
  const [zone, setZone] = useState(membership.timezone ?? 'UTC');
  // The profile is the live one, whatever the switch shows (test keys have their own sandbox copy).
  const save = useMutation({
    mutationFn: (body: { name?: string; timezone: string }) =>
      api<{ data: User }>('/v1/users/me', { method: 'PATCH', body, scope: { ws: scope.ws, env: 'live' } }),
    onSuccess: () => qc.invalidateQueries({ queryKey: SESSION_KEY }),
  });
  const matches = zones.filter((z) => z.toLowerCase().includes(search.toLowerCase())).slice(0, 200);
  return (
    <form
      className="card"
      aria-labelledby="profile-title"
      onSubmit={(e) => {
        e.preventDefault();
        const name = String(new FormData(e.currentTarget).get('name') ?? '').trim();
        save.mutate({ ...(name ? { name } : {}), timezone: zone });
      }}
    >
      <h2 id="profile-title">Name and timezone</h2>
      <Field label="Name">
        {(id) => <input id={id} name="name" maxLength={100} defaultValue={membership.name ?? ''} />}
      </Field>
      <Field label="Search timezones">
        {(id) => <input id={id} type="search" value={search} onChange={(e) => setSearch(e.target.value)} />}
      </Field>
      <Field label="Timezone" hint={`Now: ${formatTime(new Date().toISOString(), zone)}`}>
        {(id) => (
          <select id={id} value={zone} onChange={(e) => setZone(e.target.value)} size={6}>
            {!matches.includes(zone) ? <option value={zone}>{zone}</option> : null}
            {matches.map((z) => (
              <option key={z} value={z}>
                {z}
              </option>
            ))}
          </select>
        )}
      </Field>
      <FormError error={save.error} />
      {save.isSuccess ? <p role="status">Saved.</p> : null}
      <button type="submit" className="primary" disabled={save.isPending}>
        Save profile
      </button>
    </form>
  );
}

function PasswordForm() {
  const change = useMutation({
    mutationFn: (body: { current_password: string; new_password: string }) =>
      api('/password/change', { method: 'POST', body }),
  });
  return (
    <form
      className="card"
      aria-labelledby="password-title"
      onSubmit={(e) => {
        e.preventDefault();
        const d = new FormData(e.currentTarget);
        change.mutate(
          { current_password: String(d.get('current')), new_password: String(d.get('next')) },
          { onSuccess: () => (e.target as HTMLFormElement).reset() },
        );
      }}
    >
      <h2 id="password-title">Password</h2>
      <Field label="Current password">
        {(id) => <input id={id} name="current" type="password" autoComplete="current-password" required />}
      </Field>
      <Field label="New password" hint="10 to 200 characters. Your other sessions end.">
        {(id) => <input id={id} name="next" type="password" autoComplete="new-password" minLength={10} required />}
      </Field>
      <FormError error={change.error} />
      {change.isSuccess ? <p role="status">Password changed; your other sessions were signed out.</p> : null}
      <button type="submit" className="primary" disabled={change.isPending}>
        Change password
      </button>
    </form>
  );
}

function Sessions() {
  const qc = useQueryClient();
  const sessions = useQuery({
    queryKey: ['sessions'],
    queryFn: () => api<{ data: SessionInfo[] }>('/sessions'),
  });
  const end = useMutation({
    mutationFn: (id: string) => api(`/sessions/${id}`, { method: 'DELETE' }),
    onSuccess: () => qc.invalidateQueries({ queryKey: ['sessions'] }),
  });
  return (
    <section className="card" aria-labelledby="sessions-title">
      <h2 id="sessions-title">Sessions</h2>
      <QueryView query={sessions} what="Loading sessions">
        {({ data }) =>
          data.length === 0 ? (
            <Empty>No open sessions.</Empty>
          ) : (
            <ul className="plain">
              {data.map((s) => (
                <li key={s.id}>
                  {s.user_agent ?? 'unknown browser'} from {s.ip ?? '?'} · signed in <Time iso={s.created_at} /> · last
                  seen <Time iso={s.last_seen_at} /> {s.current ? <strong>(this session)</strong> : null}{' '}
                  {!s.current ? (
                    <button type="button" onClick={() => end.mutate(s.id)}>
                      End session
                    </button>
                  ) : null}
                </li>
              ))}
            </ul>
          )
        }
      </QueryView>
      <FormError error={end.error} />
    </section>
  );
}

/** Delete my account (docs/data-lifecycle.md#deleting-your-own-account): the person types their email to confirm. */
function DeleteAccount() {
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [email, setEmail] = useState('');
  return (
    <section className="card" aria-labelledby="delete-account-title">
      <h2 id="delete-account-title">Delete my account</h2>
      <p>
        Erases your email, name, addresses and browsers from every workspace you are a member of, your sign-in and your
        emails; the audit log keeps what was done, by an erased person. Refused while you are the last admin of a
        workspace.
      </p>
      <Field label="Type your email to confirm">
        {(id) => (
          <input id={id} type="email" autoComplete="off" value={email} onChange={(e) => setEmail(e.target.value)} />
        )}
      </Field>
      <ConfirmButton
        label="Delete my account"
        title="Delete your account?"
        message="This cannot be undone: you are removed from every workspace and signed out."
        confirmLabel="Delete my account"
        onConfirm={async () => {
          await api('/account/delete', { method: 'POST', body: { email } });
          qc.clear();
          qc.setQueryData(SESSION_KEY, null);
          navigate('/sign-in');
        }}
      />
    </section>
  );
}
