import type { ReactNode } from 'react';
import { ApiError } from '../api/client';

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <p className="state state-loading" role="status" aria-live="polite">
      {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="state state-empty">{children}</div>;
}

export function ErrorState({ error, retry }: { error: unknown; retry?: () => void }) {
  const message = error instanceof ApiError ? error.message : 'Something went wrong.';
  const code = error instanceof ApiError ? error.code : undefined;
  return (
    <div className="state state-error" role="alert">
      <p>
        <strong>{error instanceof ApiError && error.status === 403 ? 'Not allowed. ' : 'Could not load. '}</strong>
        {message}
        {code ? <span className="muted"> ({code})</span> : null}
      </p>
      {retry ? (
        <button type="button" onClick={retry}>
          Retry
        </button>
      ) : null}
    </div>
  );
}

/** Loading, error or the content of a query, in one place for every page. */
export function QueryView<T>({
  query,
  children,
  what,
}: {
  query: { isPending: boolean; error: unknown; data: T | undefined; refetch: () => unknown };
  children: (data: T) => ReactNode;
  what?: string;
}) {
  if (query.isPending) return <Loading what={what} />;
  if (query.error || query.data === undefined) return <ErrorState error={query.error} retry={() => query.refetch()} />;
  return <>{children(query.data)}</>;
}

/** What a mutation's error says about one field, for Field's `error` (shown beside that field). */
export function fieldErrorOf(error: unknown, field: string): string | undefined {
  if (!(error instanceof ApiError)) return undefined;
  const messages = error.details.filter((d) => d.field === field).map((d) => d.message);
  return messages.length > 0 ? messages.join(' ') : undefined;
}

/**
 * A mutation's error under its form. `attached` names the fields whose errors their Field shows;
 * each message is said once: an error about one attached field only is left to that field.
 */
export function FormError({ error, attached = [] }: { error: unknown; attached?: string[] }) {
  if (!error) return null;
  const e = error instanceof ApiError ? error : undefined;
  const details = e?.details ?? [];
  const rest = details.filter((d) => !attached.includes(d.field));
  if (e && rest.length === 0 && details.some((d) => d.message === e.message)) return null;
  const listed = rest.filter((d) => d.message !== e?.message);
  return (
    <div className="form-error" role="alert">
      {e?.message ?? 'Something went wrong.'}
      {listed.length ? (
        <ul>
          {listed.map((d) => (
            <li key={`${d.field}-${d.issue}`}>
              {d.field}: {d.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
