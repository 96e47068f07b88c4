import { useState } from 'react';
import type { ApiKey, User } from '../../api/types';
import { SCOPES } from '../../lib/closed-sets';
import { useV1Mutation } from '../../lib/mutations';
import { useScopedList } from '../../lib/queries';
import { useCurrent } from '../../lib/session';
import { useUrlFilters } from '../../lib/url-filters';
import { HistoryLink } from '../../ui/history-link';
import { ListTable } from '../../ui/list';
import { Badge, ConfirmButton, PageHeader, Time } from '../../ui/primitives';
import { Sparkline, useKeySparklines } from '../usage/sparkline';
import { GenerateKeyDialog, RollKeyDialog } from './key-dialogs';

const STATUS_TONE = { active: 'good', expired: 'warn', revoked: 'bad' } as const;

export default function KeysPage() {
  const { isAdmin, scope, membership } = useCurrent();
  // Viewers have no usage:read: no 30-day column for them.
  const canSeeUsage = membership.role !== 'viewer';
  const sparklines = useKeySparklines(canSeeUsage);
  const keys = useScopedList<ApiKey>('/v1/keys', {}, 100);
  const members = useScopedList<User>('/v1/users', {}, 100);
  const revoke = useV1Mutation('delete', '/v1/keys/{id}');
  const [open, setOpen] = useState(false);
  const [rolling, setRolling] = useState<ApiKey | null>(null);
  // Revoked keys stay listed by the API; the page hides them unless asked (?revoked=show).
  const filters = useUrlFilters();
  const showRevoked = filters.get('revoked') === 'show';
  const loaded = (keys.data?.pages ?? []).flatMap((p) => p.data);
  const hidden = showRevoked ? 0 : loaded.filter((k) => k.status === 'revoked').length;
  const owners = new Map((members.data?.pages ?? []).flatMap((p) => p.data).map((u) => [u.id, u.email]));
  // A rolled key's successor has the same name: it names the key it was rolled from (its prefix when loaded).
  const byId = new Map(loaded.map((k) => [k.id, k]));
  return (
    <section>
      <PageHeader
        title="API Keys"
        actions={
          <button type="button" className="primary" onClick={() => setOpen(true)}>
            Generate New Key
          </button>
        }
      >
        <p className="muted">
          {isAdmin ? 'Every key of this workspace, live and test.' : 'Your keys, live and test.'} A key is shown once,
          when it is made; here you see its prefix.
        </p>
      </PageHeader>
      <div className="filters">
        <label className="check">
          <input
            type="checkbox"
            checked={showRevoked}
            onChange={(e) => filters.set('revoked', e.target.checked ? 'show' : '')}
          />
          Show revoked keys
        </label>
        {hidden > 0 ? (
          <span className="muted" role="status">
            {hidden} revoked {hidden === 1 ? 'key' : 'keys'} hidden
          </span>
        ) : null}
      </div>
      <ListTable
        list={keys}
        what="Loading keys"
        empty="No API keys yet. Generate one to call the API."
        caption="API keys"
        columns={[
          'Name',
          'Environment',
          'Prefix',
          'Owner',
          'Scopes',
          'Created',
          'Last used',
          ...(canSeeUsage ? ['Requests, 30 days'] : []),
          'Status',
          { hidden: 'Actions' },
        ]}
      >
        {(rows) =>
          rows
            .filter((k) => showRevoked || k.status !== 'revoked')
            .map((k) => (
              <tr key={k.id}>
                <td>
                  {k.name}
                  {k.rolled_from ? <RolledFrom id={k.rolled_from} from={byId.get(k.rolled_from)} /> : null}
                </td>
                <td>
                  <Badge tone={k.env === 'live' ? 'good' : 'test'}>{k.env}</Badge>
                </td>
                <td>
                  <code>
                    svc_{k.env}_{k.prefix}…
                  </code>
                </td>
                <td>{owners.get(k.user_id) ?? k.user_id}</td>
                <td className="scopes">{k.scopes.length === SCOPES.length ? 'all' : k.scopes.join(', ')}</td>
                <td>
                  <Time iso={k.created_at} />
                </td>
                <td>
                  <Time iso={k.last_used_at} />
                </td>
                {canSeeUsage ? (
                  <td>
                    <Sparkline values={sparklines.get(k.id)} />
                  </td>
                ) : null}
                <td>
                  <Badge tone={STATUS_TONE[k.status]}>{k.status}</Badge>
                  {k.status === 'active' && k.expires_at ? (
                    <div className="muted">
                      expires <Time iso={k.expires_at} />
                    </div>
                  ) : null}
                </td>
                <td>
                  {k.status === 'active' ? (
                    <div className="row-actions">
                      <button type="button" aria-label={`Roll ${k.name}`} onClick={() => setRolling(k)}>
                        Roll
                      </button>
                      <ConfirmButton
                        label="Revoke"
                        ariaLabel={`Revoke ${k.name}`}
                        title="Revoke this key?"
                        message={`Requests with ${k.name} (svc_${k.env}_${k.prefix}…) will fail at once with 401 expired_token. This cannot be undone.`}
                        confirmLabel="Revoke key"
                        onConfirm={() => revoke.mutateAsync({ params: { path: { id: k.id } } })}
                      />
                      <HistoryLink targetId={k.id} label={k.name} />
                    </div>
                  ) : (
                    <HistoryLink targetId={k.id} label={k.name} />
                  )}
                </td>
              </tr>
            ))
        }
      </ListTable>
      <GenerateKeyDialog open={open} onClose={() => setOpen(false)} defaultEnv={scope.env} />
      <RollKeyDialog apiKey={rolling} onClose={() => setRolling(null)} />
    </section>
  );
}

/** "rolled from svc_live_AbC1…" under a successor's name; the id when that key is not loaded (or not visible). */
function RolledFrom({ id, from }: { id: string; from: ApiKey | undefined }) {
  return (
    <div className="muted">
      rolled from <code title={id}>{from ? `svc_${from.env}_${from.prefix}…` : id}</code>
    </div>
  );
}
