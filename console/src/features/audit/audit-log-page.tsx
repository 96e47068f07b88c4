import { Fragment, useState } from 'react';
import { api } from '../../api/client';
import type { AuditEntry, List } from '../../api/types';
import { AUDIT_ACTIONS, ENVIRONMENTS } from '../../lib/closed-sets';
import { useScopedList } from '../../lib/queries';
import { saveFile } from '../../lib/save-file';
import { useCurrent } from '../../lib/session';
import { useUrlFilters } from '../../lib/url-filters';
import { KeptFor, retentionOf } from '../../ui/kept-for';
import { ListTable } from '../../ui/list';
import { Badge, FilterSelect, PageHeader, Time } from '../../ui/primitives';
import { SearchBox } from '../../ui/search';
import { FormError } from '../../ui/states';

/** The action filter: every action, and each family of them (`member.` is every member change). */
const ACTION_CHOICES = [...new Set(AUDIT_ACTIONS.map((a) => `${a.split('.')[0]}.`)), ...AUDIT_ACTIONS].sort();

/** The table's columns; on a phone each row is a card whose cells name these (`data-label`). */
const COLUMNS = ['Time', 'Actor', 'Action', 'Target', 'Environment', 'Changes'];

/** The period filter: the last day, week, month or year (the log keeps AUDIT_RETENTION_DAYS, 400 by default). */
const PERIODS: Record<string, number> = {
  'last 24 hours': 1,
  'last 7 days': 7,
  'last 30 days': 30,
  'last 365 days': 365,
};

/** The query of the page's filters, as GET /v1/audit-log takes it. */
function queryOf(f: ReturnType<typeof useUrlFilters>): Record<string, string | undefined> {
  return {
    actor_id: f.get('actor') || undefined,
    action: f.get('action') || undefined,
    target_id: f.get('target') || undefined,
    env: f.get('env') || undefined,
    from: f.get('from') || undefined,
    to: f.get('to') || undefined,
  };
}

/** The workspace's audit log (admins): who changed what, when and from where; newest first. */
export default function AuditLogPage() {
  const { isAdmin } = useCurrent();
  if (!isAdmin) {
    return (
      <section>
        <PageHeader title="Audit log" />
        <p>Only admins of this workspace can read its audit log.</p>
      </section>
    );
  }
  return <AuditLog />;
}

function AuditLog() {
  const filters = useUrlFilters();
  const query = queryOf(filters);
  const list = useScopedList<AuditEntry>('/v1/audit-log', query, 50, { order: null });
  const [openId, setOpenId] = useState<string | null>(null);
  const period = Object.keys(PERIODS).find((p) => filters.get('period') === p) ?? '';
  const setPeriod = (p: string) => {
    filters.set('period', p);
    const days = PERIODS[p];
    filters.set('from', days ? new Date(Date.now() - days * 86_400_000).toISOString() : '');
  };
  const filtered = Object.values(query).some(Boolean);
  return (
    <section>
      <PageHeader title="Audit log" actions={<ExportButton query={query} />}>
        <p className="muted">
          Every change to this workspace, live and test: who made it, when and from where. Newest first.{' '}
          <KeptFor days={retentionOf(list)} />
        </p>
      </PageHeader>
      <div className="filters">
        <SearchBox
          label="Actor id"
          hint="A user (usr_…), a key (key_…) or the system (cli, worker…)"
          value={filters.get('actor')}
          onSearch={(text) => filters.set('actor', text)}
        />
        <FilterSelect
          label="Action"
          value={filters.get('action')}
          options={ACTION_CHOICES}
          onChange={(v) => filters.set('action', v)}
        />
        <SearchBox
          label="Target id"
          hint="The changes of one resource, key, member, endpoint…"
          value={filters.get('target')}
          onSearch={(text) => filters.set('target', text)}
        />
        <FilterSelect
          label="Environment"
          value={filters.get('env')}
          options={ENVIRONMENTS}
          onChange={(v) => filters.set('env', v)}
        />
        <FilterSelect label="Period" value={period} options={Object.keys(PERIODS)} onChange={setPeriod} />
      </div>
      <ListTable
        list={list}
        what="Loading the audit log"
        empty={filtered ? 'No entries match these filters.' : 'No entries yet.'}
        caption="Audit log"
        columns={COLUMNS}
        stacked
      >
        {(rows) =>
          rows.map((e) => (
            <Fragment key={e.id}>
              <tr>
                <td data-label="Time">
                  <Time iso={e.time} />
                </td>
                <td data-label="Actor">
                  <ActorCell actor={e.actor} onFilter={(id) => filters.set('actor', id)} />
                </td>
                <td data-label="Action">
                  <code>{e.action}</code>
                </td>
                <td data-label="Target">
                  <span className="muted">{e.target.type}</span>{' '}
                  <button
                    type="button"
                    className="link"
                    title="Only the changes of this target"
                    onClick={() => filters.set('target', e.target.id)}
                  >
                    <code>{e.target.id}</code>
                  </button>
                </td>
                <td data-label="Environment">
                  {e.env ? <Badge tone={e.env === 'live' ? 'good' : 'test'}>{e.env}</Badge> : <span>—</span>}
                </td>
                <td data-label="Changes">
                  <button
                    type="button"
                    aria-expanded={openId === e.id}
                    aria-label={`${openId === e.id ? 'Hide' : 'Show'} the changes of ${e.action} #${e.seq}`}
                    onClick={() => setOpenId(openId === e.id ? null : e.id)}
                  >
                    {openId === e.id ? 'Hide' : `Show (${Object.keys(e.changes ?? {}).length})`}
                  </button>
                </td>
              </tr>
              {openId === e.id ? (
                <tr className="payload-row">
                  <td colSpan={6}>
                    <EntryDetail entry={e} />
                  </td>
                </tr>
              ) : null}
            </Fragment>
          ))
        }
      </ListTable>
    </section>
  );
}

function ActorCell({ actor, onFilter }: { actor: AuditEntry['actor']; onFilter: (id: string) => void }) {
  return (
    <>
      {actor.name} {actor.type !== 'user' ? <Badge>{actor.type}</Badge> : null}
      <div>
        <button
          type="button"
          className="link muted"
          title="Only the changes of this actor"
          onClick={() => onFilter(actor.id)}
        >
          <code>{actor.id}</code>
        </button>
      </div>
    </>
  );
}

/** A value of a change, readable: text as is, the rest as compact JSON; none as a dash. */
function Value({ v }: { v: unknown }) {
  if (v === null || v === undefined) return <span className="muted">—</span>;
  if (v === '[redacted]') return <Badge tone="warn">redacted</Badge>;
  return <code className="value">{typeof v === 'string' ? v : JSON.stringify(v)}</code>;
}

/** An entry's changes as a before/after table, and where the change came from. */
function EntryDetail({ entry }: { entry: AuditEntry }) {
  const changes = Object.entries(entry.changes ?? {});
  return (
    <div className="audit-detail">
      {changes.length === 0 ? (
        <p className="muted">No field changed (the action says it all).</p>
      ) : (
        <table className="diff">
          <caption>
            Changes of {entry.action} #{entry.seq}
          </caption>
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Before</th>
              <th scope="col">After</th>
            </tr>
          </thead>
          <tbody>
            {changes.map(([field, c]) => (
              <tr key={field}>
                <th scope="row">{field}</th>
                <td className="before">
                  <Value v={c.before} />
                </td>
                <td className="after">
                  <Value v={c.after} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <dl className="audit-origin">
        <dt>Entry</dt>
        <dd>
          <code>{entry.id}</code> (#{entry.seq})
        </dd>
        <dt>Time (UTC)</dt>
        <dd>{entry.time}</dd>
        <dt>Request</dt>
        <dd>{entry.request_id ? <code>{entry.request_id}</code> : '—'}</dd>
        <dt>Address</dt>
        <dd>{entry.ip ?? '—'}</dd>
        <dt>User agent</dt>
        <dd>{entry.user_agent ?? '—'}</dd>
      </dl>
    </div>
  );
}

/** "Export NDJSON": every entry of the filtered range (all its pages), one JSON object a line, as a file. */
function ExportButton({ query }: { query: Record<string, string | undefined> }) {
  const { scope } = useCurrent();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      const lines: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await api<List<AuditEntry>>('/v1/audit-log', { scope, query: { ...query, limit: '100', cursor } });
        for (const e of page.data) lines.push(JSON.stringify(e));
        cursor = page.meta.next_cursor ?? undefined;
      } while (cursor);
      saveFile(
        new Blob([lines.map((l) => `${l}\n`).join('')], { type: 'application/x-ndjson' }),
        `audit-log-${scope.ws}.ndjson`,
      );
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div>
      <button type="button" onClick={run} disabled={busy}>
        {busy ? 'Exporting…' : 'Export NDJSON'}
      </button>
      <FormError error={error} />
    </div>
  );
}
