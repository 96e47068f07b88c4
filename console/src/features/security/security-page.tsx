import type { MemberFactor, Policy, SsoState, User } from '../../api/types';
import { useScopedList, useScopedMutation, useScopedQuery } from '../../lib/queries';
import { useCurrent } from '../../lib/session';
import { Badge, ConfirmButton, PageHeader } from '../../ui/primitives';
import { Empty, FormError, QueryView } from '../../ui/states';
import { SsoForm } from './sso-form';

/** Workspace sign-in security (admins): the second-factor policy, single sign-on, members' second factors. */
export default function SecurityPage() {
  const { isAdmin } = useCurrent();
  if (!isAdmin) {
    return (
      <section>
        <PageHeader title="Sign-in security" />
        <p>Only admins of this workspace can see and change how its members sign in.</p>
      </section>
    );
  }
  return (
    <section>
      <PageHeader title="Sign-in security">
        <p className="muted">How the members of this workspace sign in to the console.</p>
      </PageHeader>
      <PolicyCard />
      <SsoCard />
      <MemberFactors />
    </section>
  );
}

function PolicyCard() {
  const policy = useScopedQuery<{ data: Policy }>('/workspace/sign-in-policy');
  const save = useScopedMutation<Policy, { data: Policy }>('PUT', '/workspace/sign-in-policy');
  return (
    <section className="card" aria-labelledby="policy-title">
      <h2 id="policy-title">Second factor</h2>
      <QueryView query={policy} what="Loading the policy">
        {({ data }) => (
          <>
            <label className="check">
              <input
                type="checkbox"
                checked={data.require_second_factor}
                disabled={save.isPending}
                onChange={(e) => save.mutate({ require_second_factor: e.target.checked })}
              />{' '}
              Require a second factor (two-factor codes or a passkey)
            </label>
            <p className="muted">
              Members without one set it up at their next sign-in, before any other page. Single sign-on leaves the
              second factor to the identity provider.
            </p>
            <FormError error={save.error} />
            {save.isSuccess ? <p role="status">Saved.</p> : null}
          </>
        )}
      </QueryView>
    </section>
  );
}

function SsoCard() {
  const sso = useScopedQuery<{ data: SsoState }>('/sso');
  return (
    <section className="card" aria-labelledby="sso-title">
      <h2 id="sso-title">Single sign-on (OpenID Connect)</h2>
      <QueryView query={sso} what="Loading single sign-on">
        {({ data }) => <SsoForm state={data} />}
      </QueryView>
    </section>
  );
}

function MemberFactors() {
  const members = useScopedList<User>('/v1/users', {}, 100);
  const factors = useScopedQuery<{ data: MemberFactor[] }>('/members/second-factors');
  const reset = useScopedMutation<{ _id: string }, unknown>('DELETE', (b) => `/members/${b._id}/second-factor`);
  const rows = members.data?.pages.flatMap((p) => p.data) ?? [];
  const has = new Map((factors.data?.data ?? []).map((f) => [f.user_id, f.second_factor]));
  return (
    <section className="card" aria-labelledby="factors-title">
      <h2 id="factors-title">Members' second factors</h2>
      <QueryView query={factors} what="Loading members' second factors">
        {() =>
          rows.length === 0 ? (
            <Empty>No members.</Empty>
          ) : (
            <ul className="plain">
              {rows.map((u) => (
                <li key={u.id}>
                  {u.email} ·{' '}
                  {has.get(u.id) ? <Badge tone="good">second factor on</Badge> : <Badge tone="warn">none</Badge>}{' '}
                  {has.get(u.id) ? (
                    <ConfirmButton
                      label="Reset"
                      ariaLabel={`Reset the second factor of ${u.email}`}
                      title="Reset this member's second factor?"
                      message={`${u.email}'s two-factor codes, recovery codes and passkeys stop working; they are told by email.`}
                      confirmLabel="Reset second factor"
                      onConfirm={() => reset.mutateAsync({ _id: u.id })}
                    />
                  ) : null}
                </li>
              ))}
            </ul>
          )
        }
      </QueryView>
    </section>
  );
}
