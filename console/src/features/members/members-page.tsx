import { useState } from 'react';
import type { Invited, PendingInvite, Role, User } from '../../api/types';
import { ROLES } from '../../lib/closed-sets';
import { useScopedList, useScopedMutation, useScopedQuery } from '../../lib/queries';
import { useCurrent } from '../../lib/session';
import { MutationDialog } from '../../ui/forms';
import { HistoryLink } from '../../ui/history-link';
import { ListTable } from '../../ui/list';
import { Badge, ConfirmButton, Dialog, Field, PageHeader, SecretOnce, Time } from '../../ui/primitives';
import { Empty, FormError, QueryView } from '../../ui/states';

const ROLE_MEANS: Record<Role, string> = {
  admin: 'Admins manage keys, webhooks and members.',
  member: 'Members read and write resources.',
  viewer: 'Viewers only read.',
};

export default function MembersPage() {
  const { isAdmin, membership } = useCurrent();
  const members = useScopedList<User>('/v1/users', {}, 100);
  const setRole = useScopedMutation<{ _id: string; role: Role }, unknown>('PATCH', (b) => `/members/${b._id}`);
  const remove = useScopedMutation<{ _id: string }, unknown>('DELETE', (b) => `/members/${b._id}`);
  const [open, setOpen] = useState(false);
  const [changing, setChanging] = useState<{ user: User; role: Role } | null>(null);
  return (
    <section>
      <PageHeader
        title="Members"
        actions={
          isAdmin ? (
            <button type="button" className="primary" onClick={() => setOpen(true)}>
              Invite member
            </button>
          ) : null
        }
      >
        <p className="muted">
          Viewers read; members also write resources; admins also manage keys, webhooks and members.
        </p>
      </PageHeader>
      <ListTable
        list={members}
        what="Loading members"
        empty="No members."
        caption="Members"
        columns={['Email', 'Name', 'Role', 'Joined', ...(isAdmin ? [{ hidden: 'Actions' }] : [])]}
      >
        {(rows) =>
          rows.map((u) => (
            <tr key={u.id}>
              <td>{u.email}</td>
              <td>{u.name ?? <span className="muted">—</span>}</td>
              <td>
                {isAdmin && u.id !== membership.user_id ? (
                  <select
                    aria-label={`Role of ${u.email}`}
                    value={u.role}
                    onChange={(e) => {
                      setRole.reset();
                      setChanging({ user: u, role: e.target.value as Role });
                    }}
                  >
                    {ROLES.map((r) => (
                      <option key={r}>{r}</option>
                    ))}
                  </select>
                ) : (
                  <Badge>{u.role}</Badge>
                )}
              </td>
              <td>
                <Time iso={u.created_at} />
              </td>
              {isAdmin ? (
                <td>
                  <div className="row-actions">
                    {u.id !== membership.user_id ? (
                      <ConfirmButton
                        label="Remove"
                        ariaLabel={`Remove ${u.email}`}
                        title="Remove this member?"
                        message={`${u.email} loses access at once, and their API keys stop working.`}
                        confirmLabel="Remove member"
                        onConfirm={() => remove.mutateAsync({ _id: u.id })}
                      />
                    ) : (
                      <span className="muted">you</span>
                    )}
                    <HistoryLink targetId={u.id} label={u.email} />
                  </div>
                </td>
              ) : null}
            </tr>
          ))
        }
      </ListTable>
      <Dialog title="Change this member's role?" open={changing !== null} onClose={() => setChanging(null)}>
        {changing ? (
          <>
            <p>
              {changing.user.email} becomes {changing.role === 'admin' ? 'an' : 'a'} <strong>{changing.role}</strong>{' '}
              (now {changing.user.role}). {ROLE_MEANS[changing.role]} Their API keys keep only what the new role allows.
            </p>
            <FormError error={setRole.error} />
            <div className="actions">
              <button type="button" onClick={() => setChanging(null)}>
                Cancel
              </button>
              <button
                type="button"
                className="primary"
                disabled={setRole.isPending}
                onClick={() =>
                  setRole.mutate({ _id: changing.user.id, role: changing.role }, { onSuccess: () => setChanging(null) })
                }
              >
                Change role
              </button>
            </div>
          </>
        ) : null}
      </Dialog>
      {isAdmin ? <PendingInvites /> : null}
      <InviteDialog open={open} onClose={() => setOpen(false)} />
    </section>
  );
}

function PendingInvites() {
  const invites = useScopedQuery<{ data: PendingInvite[] }>('/members/invites');
  return (
    <section aria-labelledby="pending-title">
      <h2 id="pending-title">Pending invites</h2>
      <QueryView query={invites} what="Loading invites">
        {({ data }) =>
          data.length === 0 ? (
            <Empty>No pending invites.</Empty>
          ) : (
            <ul className="plain">
              {data.map((i) => (
                <li key={i.user_id}>
                  {i.email} as {i.role} — link valid until <Time iso={i.expires_at} />
                </li>
              ))}
            </ul>
          )
        }
      </QueryView>
    </section>
  );
}

function InviteDialog({ open, onClose }: { open: boolean; onClose: () => void }) {
  const invite = useScopedMutation<{ email: string; role: Role }, { data: Invited }>('POST', '/members');
  return (
    <MutationDialog
      title="Invite member"
      madeTitle="Invite made"
      open={open}
      onClose={onClose}
      mutation={invite}
      submitLabel="Invite"
      onSubmit={(d) => invite.mutate({ email: String(d.get('email')), role: String(d.get('role')) as Role })}
      made={({ data }) => (
        <>
          <p>
            Send this link to {data.email}. It works once, until <Time iso={data.expires_at} />.
          </p>
          <SecretOnce label="Invite link" value={data.invite_url} />
        </>
      )}
    >
      <Field label="Email">{(id) => <input id={id} name="email" type="email" required />}</Field>
      <Field label="Role">
        {(id) => (
          <select id={id} name="role" defaultValue="member">
            {ROLES.map((r) => (
              <option key={r}>{r}</option>
            ))}
          </select>
        )}
      </Field>
    </MutationDialog>
  );
}
