import type { WorkspaceDeletion } from '../api/types';
import { useScopedMutation, useScopedQuery } from '../lib/queries';
import { useCurrent } from '../lib/session';
import { Time } from './primitives';
import { FormError } from './states';

/**
 * On every page while the workspace's deletion is scheduled (docs/data-lifecycle.md#deleting-a-workspace): when its
 * rows go, and for admins "Cancel deletion". Nothing while none is scheduled, or while the state cannot be read.
 */
export function DeletionBanner() {
  const { isAdmin } = useCurrent();
  const state = useScopedQuery<{ data: WorkspaceDeletion }>('/workspace/deletion');
  const cancel = useScopedMutation<undefined, { data: WorkspaceDeletion }>('POST', '/workspace/deletion/cancel');
  const deletion = state.data?.data;
  if (!deletion?.delete_at) return null;
  return (
    <section className="deletion-banner" role="alert" aria-label="Workspace deletion">
      <p>
        <strong>This workspace is scheduled for deletion.</strong> Its API keys, webhook deliveries and chat messages
        are stopped; all its data is deleted at <Time iso={deletion.delete_at} />.
        {isAdmin ? null : ' An admin can cancel the deletion until then.'}
      </p>
      {isAdmin ? (
        <button type="button" disabled={cancel.isPending} onClick={() => cancel.mutate(undefined)}>
          {cancel.isPending ? 'Cancelling…' : 'Cancel deletion'}
        </button>
      ) : null}
      <FormError error={cancel.error} />
    </section>
  );
}
