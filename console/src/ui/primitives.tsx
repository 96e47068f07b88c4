import { type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { useCurrent } from '../lib/session';
import { formatTime } from '../lib/time';

/** A timestamp in the user's timezone, with the exact UTC value on hover (title). */
export function Time({ iso }: { iso: string | null | undefined }) {
  const { timeZone } = useCurrent();
  if (!iso) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={iso}>
      {formatTime(iso, timeZone)}
    </time>
  );
}

export function Badge({
  tone = 'neutral',
  children,
}: {
  tone?: 'neutral' | 'good' | 'bad' | 'warn' | 'test';
  children: ReactNode;
}) {
  return <span className={`badge badge-${tone}`}>{children}</span>;
}

export function PageHeader({ title, actions, children }: { title: string; actions?: ReactNode; children?: ReactNode }) {
  return (
    <header className="page-header">
      <div>
        <h1>{title}</h1>
        {children}
      </div>
      {actions ? <div className="actions">{actions}</div> : null}
    </header>
  );
}

/** What Field gives its control: the error and hint it is described by. */
export interface Described {
  'aria-describedby'?: string;
  'aria-invalid'?: true;
}

/** A labelled control; `error` (from the server, see fieldErrorOf) is shown once, under it, and describes it. */
export function Field({
  label,
  children,
  hint,
  error,
}: {
  label: string;
  hint?: string;
  error?: string;
  children: (id: string, described: Described) => ReactNode;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const by = [error ? errorId : null, hint ? hintId : null].filter(Boolean).join(' ');
  const described: Described = {
    ...(by ? { 'aria-describedby': by } : {}),
    ...(error ? { 'aria-invalid': true } : {}),
  };
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id, described)}
      {error ? (
        <small id={errorId} className="form-error field-error" role="alert">
          {error}
        </small>
      ) : null}
      {hint ? (
        <small id={hintId} className="muted">
          {hint}
        </small>
      ) : null}
    </div>
  );
}

/** A modal dialog (native <dialog>: focus is trapped and Escape closes it). */
export function Dialog({
  title,
  open,
  onClose,
  children,
}: {
  title: string;
  open: boolean;
  onClose: () => void;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={onClose} className="dialog">
      {open ? (
        <>
          <h2 id={titleId}>{title}</h2>
          {children}
        </>
      ) : null}
    </dialog>
  );
}

/** Asks before a destructive action. */
export function ConfirmButton({
  label,
  ariaLabel,
  title,
  message,
  confirmLabel,
  onConfirm,
  danger = true,
}: {
  label: string;
  /** A longer accessible name when the visible label is short (e.g. which row it acts on). */
  ariaLabel?: string;
  title: string;
  message: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<unknown> | unknown;
  danger?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  return (
    <>
      <button type="button" className={danger ? 'danger' : ''} aria-label={ariaLabel} onClick={() => setOpen(true)}>
        {label}
      </button>
      <Dialog title={title} open={open} onClose={() => setOpen(false)}>
        <p>{message}</p>
        {error ? (
          <p className="form-error" role="alert">
            {error instanceof Error ? error.message : 'Failed.'}
          </p>
        ) : null}
        <div className="actions">
          <button type="button" onClick={() => setOpen(false)}>
            Cancel
          </button>
          <button
            type="button"
            className={danger ? 'danger' : 'primary'}
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              setError(null);
              try {
                await onConfirm();
                setOpen(false);
              } catch (e) {
                setError(e);
              } finally {
                setBusy(false);
              }
            }}
          >
            {confirmLabel}
          </button>
        </div>
      </Dialog>
    </>
  );
}

/** A secret shown once, with a copy button. */
export function SecretOnce({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  const id = useId();
  return (
    <div className="secret">
      <p>
        <label htmlFor={id}>
          <strong>{label}</strong>
        </label>{' '}
        — shown once: copy it now, it cannot be shown again.
      </p>
      <input id={id} className="secret-value" readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
      <button
        type="button"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(value);
            setCopied(true);
          } catch {
            setCopied(false);
          }
        }}
      >
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

export function Pager({
  hasMore,
  onMore,
  busy,
  label = 'Load more',
}: {
  hasMore: boolean;
  onMore: () => void;
  busy: boolean;
  label?: string;
}) {
  if (!hasMore) return null;
  return (
    <div className="pager">
      <button type="button" onClick={onMore} disabled={busy}>
        {busy ? 'Loading…' : label}
      </button>
    </div>
  );
}

/** A labelled select for list filters (the value lives in the URL). */
export function FilterSelect({
  label,
  value,
  options,
  onChange,
  anyLabel = 'any',
}: {
  label: string;
  value: string;
  options: readonly string[];
  onChange: (v: string) => void;
  /** The label of the empty choice (no filter); null: there is none. */
  anyLabel?: string | null;
}) {
  const id = useId();
  return (
    <div className="filter">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
        {anyLabel === null ? null : <option value="">{anyLabel}</option>}
        {options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    </div>
  );
}
