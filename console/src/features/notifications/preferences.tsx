import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../../api/client';
import type { NotificationPreferenceItem } from '../../api/types';
import { useCurrent } from '../../lib/session';
import { FormError, QueryView } from '../../ui/states';

const LABEL: Record<string, string> = {
  security: 'Security (keys, members, password)',
  webhooks: 'Webhook endpoint health',
  usage: 'Usage thresholds',
  billing: 'Billing',
};

type Prefs = NotificationPreferenceItem[];

/** The profile's notification preferences (docs/notifications.md#preferences): per category, email and in-app. */
export function NotificationPreferences() {
  const { scope } = useCurrent();
  const key = [scope.ws, 'notifications', 'preferences'];
  const prefs = useQuery({
    queryKey: key,
    queryFn: () => api<{ data: Prefs }>('/notifications/preferences', { scope }),
  });
  return (
    <section className="card" aria-labelledby="notifications-title" id="notifications">
      <h2 id="notifications-title">Notification preferences</h2>
      <QueryView query={prefs} what="Loading notification preferences">
        {(d) => <PreferencesForm initial={d.data} queryKey={key} />}
      </QueryView>
    </section>
  );
}

function PreferencesForm({ initial, queryKey }: { initial: Prefs; queryKey: string[] }) {
  const { scope } = useCurrent();
  const qc = useQueryClient();
  const [prefs, setPrefs] = useState(initial);
  const save = useMutation({
    mutationFn: (body: { preferences: Omit<NotificationPreferenceItem, 'locked'>[] }) =>
      api<{ data: Prefs }>('/notifications/preferences', { method: 'PUT', scope, body }),
    onSuccess: (out) => qc.setQueryData(queryKey, out),
  });
  const toggle = (category: string, channel: 'email' | 'in_app') =>
    setPrefs((ps) => ps.map((p) => (p.category === category ? { ...p, [channel]: !p[channel] } : p)));
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate({
          preferences: prefs
            .filter((p) => !p.locked)
            .map(({ category, email, in_app }) => ({ category, email, in_app })),
        });
      }}
    >
      <p className="muted">
        In this workspace. Security notifications are always sent by email and shown in the console.
      </p>
      <table>
        <caption className="visually-hidden">Channels per category</caption>
        <thead>
          <tr>
            <th scope="col">Category</th>
            <th scope="col">Email</th>
            <th scope="col">In the console</th>
          </tr>
        </thead>
        <tbody>
          {prefs.map((p) => (
            <tr key={p.category}>
              <th scope="row">{LABEL[p.category] ?? p.category}</th>
              {(['email', 'in_app'] as const).map((channel) => (
                <td key={channel}>
                  <input
                    type="checkbox"
                    aria-label={`${LABEL[p.category] ?? p.category}: ${channel === 'email' ? 'email' : 'in the console'}`}
                    checked={p[channel]}
                    disabled={p.locked}
                    onChange={() => toggle(p.category, channel)}
                  />
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
      <FormError error={save.error} />
      {save.isSuccess ? <p role="status">Preferences saved.</p> : null}
      <button type="submit" className="primary" disabled={save.isPending}>
        Save preferences
      </button>
    </form>
  );
}
