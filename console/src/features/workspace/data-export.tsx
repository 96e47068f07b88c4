import { useState } from 'react';
import { apiFile } from '../../api/client';
import type { Export } from '../../api/types';
import { useV1Mutation } from '../../lib/mutations';
import { useScopedList } from '../../lib/queries';
import { saveFile } from '../../lib/save-file';
import { useCurrent } from '../../lib/session';
import { ListTable } from '../../ui/list';
import { Badge, Time } from '../../ui/primitives';
import { FormError } from '../../ui/states';

const STATUS: Record<Export['status'], { label: string; tone: 'neutral' | 'good' | 'bad' | 'warn' }> = {
  queued: { label: 'Queued', tone: 'neutral' },
  running: { label: 'Running', tone: 'warn' },
  ready: { label: 'Ready', tone: 'good' },
  failed: { label: 'Failed', tone: 'bad' },
  expired: { label: 'Expired', tone: 'neutral' },
};

/** Still being written: the list asks again every few seconds until none is. */
const inProgress = (rows: Export[]) => rows.some((e) => e.status === 'queued' || e.status === 'running');

/** 48213 → "47.1 KiB". */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

/**
 * "Data export" (docs/data-lifecycle.md#export): an admin requests an archive of the whole workspace, follows its
 * progress (the list polls while one is queued or running) and downloads it for 24 hours once it is ready.
 */
export function DataExport() {
  const list = useScopedList<Export>('/v1/exports', {}, 10, { order: null, live: inProgress });
  const request = useV1Mutation('post', '/v1/exports');
  const busy = list.data?.pages.some((p) => inProgress(p.data)) ?? false;
  return (
    <section className="card export-card" aria-labelledby="export-title">
      <h2 id="export-title">Data export</h2>
      <p>
        An archive (<code>.tar.gz</code>) of the whole workspace, live and test: members, API keys without their
        secrets, resources, webhooks without their signing secrets, events, the last 30 days of deliveries, usage,
        invoices and the audit log with its hashes. It is written in the background; once ready it can be downloaded for
        24 hours.
      </p>
      <form
        className="export-request"
        onSubmit={(e) => {
          e.preventDefault();
          request.mutate({});
        }}
      >
        <button type="submit" className="primary" disabled={request.isPending}>
          {request.isPending ? 'Requesting…' : 'Request export'}
        </button>
        {busy ? (
          <span className="muted" role="status">
            {' '}
            An export is being written; this list updates by itself.
          </span>
        ) : null}
      </form>
      <FormError error={request.error} />
      <ListTable
        list={list}
        what="Loading the exports"
        empty={<p>No export yet. Request one above.</p>}
        caption="Exports"
        columns={['Requested', 'Status', 'Progress', 'Size', { hidden: 'Download' }]}
        stacked
      >
        {(rows) => rows.map((e) => <ExportRow key={e.id} e={e} />)}
      </ListTable>
    </section>
  );
}

function ExportRow({ e }: { e: Export }) {
  const status = STATUS[e.status];
  const { kinds_done: done, kinds_total: total, rows_written: rows } = e.progress;
  return (
    <tr>
      <td data-label="Requested">
        <Time iso={e.created_at} />
      </td>
      <td data-label="Status">
        <Badge tone={status.tone}>{status.label}</Badge>
      </td>
      <td data-label="Progress">
        {e.status === 'failed' ? (
          <span>{e.error ?? 'The export failed; request a new one.'}</span>
        ) : e.status === 'queued' ? (
          <span className="muted">Waiting for the worker</span>
        ) : (
          <span className="export-progress">
            <progress value={done} max={total} aria-label={`Export ${e.id}: ${done} of ${total} kinds written`} />
            <span>
              {done} of {total} kinds, {rows.toLocaleString('en')} rows
            </span>
          </span>
        )}
      </td>
      <td data-label="Size" className="nowrap">
        {e.size_bytes === null ? <span className="muted">—</span> : formatBytes(e.size_bytes)}
      </td>
      <td data-label="Download">
        {e.status === 'ready' ? <DownloadButton e={e} /> : <span className="muted">—</span>}
      </td>
    </tr>
  );
}

/**
 * The archive, through the console API (its session and the workspace's headers), saved under the server's file name.
 * Until <expiry>: after it the server answers 410 and the button says so.
 */
function DownloadButton({ e }: { e: Export }) {
  const { scope } = useCurrent();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      const file = await apiFile(`/v1/exports/${e.id}/download`, scope, `export-${e.id}.tar.gz`);
      saveFile(file.blob, file.name);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div>
      <button type="button" onClick={run} disabled={busy} aria-label={`Download export ${e.id}`}>
        {busy ? 'Downloading…' : 'Download'}
      </button>
      <div className="muted">
        until <Time iso={e.expires_at} />
      </div>
      <FormError error={error} />
    </div>
  );
}
