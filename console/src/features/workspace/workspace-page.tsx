import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../../api/client';
import type { WorkspaceDeletion } from '../../api/types';
import { useScopedQuery } from '../../lib/queries';
import { useCurrent } from '../../lib/session';
import { Field, PageHeader, Time } from '../../ui/primitives';
import { FormError, fieldErrorOf, QueryView } from '../../ui/states';
import { DataExport } from './data-export';

/** The workspace's settings (admins): its name and id, its data export, and the danger zone that deletes it. */
export default function WorkspacePage() {
  const { isAdmin, membership } = useCurrent();
  if (!isAdmin) {
    return (
      <section>
        <PageHeader title="Workspace" />
        <p>Only admins of this workspace can export its data or delete it. Ask an admin if you need an export.</p>
      </section>
    );
  }
  return (
    <section>
      <PageHeader title="Workspace">
        <p className="muted">
          {membership.workspace_name} · <code>{membership.workspace_id}</code>
        </p>
      </PageHeader>
      <DataExport />
      <DangerZone name={membership.workspace_name} />
    </section>
  );
}

/**
 * "Delete workspace": the admin types the workspace's name (docs/data-lifecycle.md#deleting-a-workspace). Scheduled,
 * it shows when the rows go instead; "Cancel deletion" is in the banner above every page.
 */
function DangerZone({ name }: { name: string }) {
  const { scope } = useCurrent();
  const qc = useQueryClient();
  const state = useScopedQuery<{ data: WorkspaceDeletion }>('/workspace/deletion');
  const [typed, setTyped] = useState('');
  const schedule = useMutation({
    mutationFn: (confirm: string) =>
      api<{ data: WorkspaceDeletion }>('/v1/workspace', { method: 'DELETE', scope, body: { confirm } }),
    onSuccess: () => qc.invalidateQueries({ queryKey: [scope.ws] }),
  });
  return (
    <section className="card danger-zone" aria-labelledby="danger-title">
      <h2 id="danger-title">Delete workspace</h2>
      <QueryView query={state} what="Loading the workspace's state">
        {({ data }) =>
          data.delete_at ? (
            <p role="status">
              The deletion is scheduled: all data of this workspace is deleted at <Time iso={data.delete_at} />, unless
              an admin cancels it before (the banner above).
            </p>
          ) : (
            <form
              onSubmit={(e) => {
                e.preventDefault();
                schedule.mutate(typed);
              }}
            >
              <p>
                Its API keys and webhook deliveries stop at once, every member is emailed, and after the grace period
                every resource, webhook, event, key, member and log of the workspace is deleted (finalized invoices are
                kept). Until then an admin can cancel the deletion.
              </p>
              <Field
                label={`Type the workspace's name, ${name}, to confirm`}
                error={fieldErrorOf(schedule.error, 'confirm')}
              >
                {(id, described) => (
                  <input
                    id={id}
                    value={typed}
                    autoComplete="off"
                    onChange={(e) => setTyped(e.target.value)}
                    {...described}
                  />
                )}
              </Field>
              <FormError error={schedule.error} attached={['confirm']} />
              <button type="submit" className="danger" disabled={typed !== name || schedule.isPending}>
                {schedule.isPending ? 'Deleting…' : 'Delete workspace'}
              </button>
            </form>
          )
        }
      </QueryView>
    </section>
  );
}
