import type { Env } from './types';

/** An error answered by the server (or a network failure, status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: { field: string; issue: string; message: string }[] = [],
  ) {
    super(message);
  }
}

let csrfToken = '';
/** The session's CSRF token, sent as X-CSRF-Token on every non-GET request. */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** Where a call acts: the workspace and the live/test world from the URL. */
export interface Scope {
  ws: string;
  env: Env;
}

/**
 * Calls the console API (same-origin, session cookie). `/v1/…` paths go to the mounted /v1 routes,
 * others to the console's own routes. Throws ApiError with the server's error code and message.
 */
export async function api<T>(
  path: string,
  opts: { method?: string; body?: unknown; scope?: Scope; query?: Record<string, string | undefined> } = {},
): Promise<T> {
  const method = opts.method ?? 'GET';
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  if (opts.scope) {
    headers['x-workspace-id'] = opts.scope.ws;
    headers['x-env'] = opts.scope.env;
  }
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== '') qs.set(k, v);
  const url = `/console/api${path}${qs.size > 0 ? `?${qs}` : ''}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      credentials: 'same-origin',
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The server could not be reached. Check your connection and retry.');
  }
  const text = await res.text();
  const json = text ? safeJson(text) : undefined;
  if (!res.ok) throw errorOf(res.status, json);
  return json as T;
}

/** The ApiError of a non-2xx answer's body. */
function errorOf(status: number, json: unknown): ApiError {
  const e = (json as { error?: { code?: string; message?: string; details?: ApiError['details'] } })?.error;
  return new ApiError(status, e?.code ?? 'error', e?.message ?? `Request failed (${status}).`, e?.details);
}

/**
 * A file the console API serves (a GET in the workspace: an export's archive), as a Blob and the name the server
 * gives it (Content-Disposition), else `fallbackName`. Throws ApiError as `api` does.
 */
export async function apiFile(path: string, scope: Scope, fallbackName: string): Promise<{ blob: Blob; name: string }> {
  let res: Response;
  try {
    res = await fetch(`/console/api${path}`, {
      headers: { 'x-workspace-id': scope.ws, 'x-env': scope.env },
      credentials: 'same-origin',
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The server could not be reached. Check your connection and retry.');
  }
  if (!res.ok) {
    const text = await res.text();
    throw errorOf(res.status, text ? safeJson(text) : undefined);
  }
  const named = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '');
  return { blob: await res.blob(), name: named?.[1] ?? fallbackName };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
