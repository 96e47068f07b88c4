import { useState } from 'react';
import { useScopedList, useScopedMutation, useScopedQuery } from '../../api/hooks';
import type { Invited, PendingInvite, Role, User } from '../../api/types';
import { useCurrent } from '../../lib/session';
import { Badge, ConfirmButton, Dialog, Field, PageHeader, SecretOnce, Time } from '../../ui/primitives';
import { Empty, FormError, QueryView } from '../../ui/states';

const ROLES: Role[] = ['admin', 'member', 'viewer'];

export default function MembersPage() {
  const { isAdmin, membership } = useCurrent();
  const members = useScopedList<User>('/v1/users', {}, 100);
  const setRole = useScopedMutation<{ _id: string; role: Role }, unknown>('PATCH', (b) => `/members/${b._id}`);
  const remove = useScopedMutation<{ _id: string }, unknown>('DELETE', (b) => `/members/${b._id}`);
  const [open, setOpen] = useState(false);
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
      <QueryView query={members} what="Loading members">
        {(d) => {
          const rows = d.pages.flatMap((p) => p.data);
          if (rows.length === 0) return <Empty>No members.</Empty>;
          return (
            <div className="table-wrap">
              <table>
                <caption className="visually-hidden">Members</caption>
                <thead>
                  <tr>
                    <th scope="col">Email</th>
                    <th scope="col">Name</th>
                    <th scope="col">Role</th>
                    <th scope="col">Joined</th>
                    {isAdmin ? (
                      <th scope="col">
                        <span className="visually-hidden">Actions</span>
                      </th>
                    ) : null}
                  </tr>
                </thead>
                <tbody>
                  {rows.map((u) => (
                    <tr key={u.id}>
                      <td>{u.email}</td>
                      <td>{u.name ?? <span className="muted">—</span>}</td>
                      <td>
                        {isAdmin && u.id !== membership.user_id ? (
                          <select
                            aria-label={`Role of ${u.email}`}
                            value={u.role}
                            onChange={(e) => setRole.mutate({ _id: u.id, role: e.target.value as Role })}
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
                        </td>
                      ) : null}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          );
        }}
      </QueryView>
      <FormError error={setRole.error} />
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
  const close = () => {
    invite.reset();
    onClose();
  };
  const made = invite.data?.data;
  return (
    <Dialog title={made ? 'Invite made' : 'Invite member'} open={open} onClose={close}>
      {made ? (
        <>
          <p>
            Send this link to {made.email}. It works once, until <Time iso={made.expires_at} />.
          </p>
          <SecretOnce label="Invite link" value={made.invite_url} />
          <div className="actions">
            <button type="button" className="primary" onClick={close}>
              Done
            </button>
          </div>
        </>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            const d = new FormData(e.currentTarget);
            invite.mutate({ email: String(d.get('email')), role: String(d.get('role')) as Role });
          }}
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
          <FormError error={invite.error} />
          <div className="actions">
            <button type="button" onClick={close}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={invite.isPending}>
              Invite
            </button>
          </div>
        </form>
      )}
    </Dialog>
  );
}
