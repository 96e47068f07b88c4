/**
 * @workspace-service/client: a typed client of the Workspace Service API. The types (schema.d.ts)
 * are generated from the server's OpenAPI document; requests go through openapi-fetch. This layer
 * adds only: the key and base URL, errors as `ApiError` with the error body, an `Idempotency-Key`
 * on every POST, retries on 429/503 after `Retry-After`, and iteration over paged lists.
 * Runs wherever `fetch` and Web Crypto do (Node 20+, browsers, workers): no Node-only import.
 */
import createOpenApiClient, { type Client, type FetchOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema.js';

export type { components, operations, paths };
/** The objects of the API, by schema name: `Schemas['Resource']`. */
export type Schemas = components['schemas'];

type HttpMethod = 'get' | 'put' | 'post' | 'patch' | 'delete';
/** The paths that have an operation for `M`. */
export type PathsWith<M extends HttpMethod> = {
  [P in keyof paths]: paths[P] extends { [K in M]: object } ? P : never;
}[keyof paths];
type Operation<P extends keyof paths, M extends HttpMethod> = paths[P] extends { [K in M]: infer O } ? O : never;
type RequiredKeysOf<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
/** The options of one call: `params` (path, query, header) and `body`, as openapi-fetch takes them. */
export type CallOptions<P extends keyof paths, M extends HttpMethod> = FetchOptions<Operation<P, M>>;
type Init<P extends keyof paths, M extends HttpMethod> =
  RequiredKeysOf<CallOptions<P, M>> extends never ? [options?: CallOptions<P, M>] : [options: CallOptions<P, M>];
type SuccessStatus = 200 | 201 | 202 | 204;
type ContentOf<R> = R extends { content: { 'application/json': infer C } } ? C : undefined;
/** What a call resolves to: the body of its 2xx answer (`undefined` for a 204). */
export type ResultOf<P extends keyof paths, M extends HttpMethod> =
  Operation<P, M> extends {
    responses: infer R;
  }
    ? { [S in keyof R]: S extends SuccessStatus ? ContentOf<R[S]> : never }[keyof R]
    : never;

/** The error body every failed answer carries (docs/api.md, "Errors"): `code`, `message`, `request_id`, `details`. */
export type ErrorBody = components['schemas']['Error']['error'];

/** A non-2xx answer: its status, the error body (`code`, `message`, `request_id`, `details`) and headers. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  readonly code: string;
  readonly requestId: string;
  readonly details: ErrorBody['details'];
  readonly body: ErrorBody;
  readonly headers: Headers;
  constructor(status: number, body: ErrorBody, headers: Headers) {
    super(`${status} ${body.code}: ${body.message}`);
    this.status = status;
    this.code = body.code;
    this.requestId = body.request_id;
    this.details = body.details;
    this.body = body;
    this.headers = headers;
  }
}

export interface ClientOptions {
  /** An API key: `svc_live_…` or `svc_test_…`. */
  key: string;
  /** Where the server is, such as `https://api.example.com` (no `/v1`). */
  baseUrl: string;
  /** The `fetch` to use (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /**
   * How often to retry an answer 429 or 503 (after its `Retry-After`), or a POST whose connection
   * dropped (with the same `Idempotency-Key`, so it is never done twice). Default 2; 0 turns it off.
   */
  retries?: number;
  /** The longest wait for one retry, in ms (default 60 000); a longer `Retry-After` is not waited for. */
  maxRetryDelayMs?: number;
  /** How to wait before a retry (default: a timer); tests pass their own. */
  sleep?: (ms: number) => Promise<void>;
  /** Makes the `Idempotency-Key` of a POST that has none (default: `crypto.randomUUID()`). */
  idempotencyKey?: () => string;
}

const RETRY_STATUSES = new Set([429, 503]);
const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Seconds of a `Retry-After` header (delta-seconds or an HTTP date) in ms; 1 s when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number {
  if (value === null) return 1000;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? 1000 : Math.max(0, at - now);
}

/** The `fetch` the client hands to openapi-fetch: adds the key and idempotency key, and retries. */
function retryingFetch(opts: ClientOptions): (request: Request) => Promise<Response> {
  const send = opts.fetch ?? ((r: Request) => globalThis.fetch(r));
  const retries = opts.retries ?? 2;
  const maxDelay = opts.maxRetryDelayMs ?? 60_000;
  const sleep = opts.sleep ?? defaultSleep;
  const newKey = opts.idempotencyKey ?? (() => globalThis.crypto.randomUUID());
  return async (request) => {
    request.headers.set('authorization', `Bearer ${opts.key}`);
    const method = request.method.toUpperCase();
    if (method === 'POST' && !request.headers.has('idempotency-key')) request.headers.set('idempotency-key', newKey());
    // Safe to send again: GET, PUT and DELETE are idempotent, and a POST carries its Idempotency-Key.
    const repeatable = method !== 'PATCH';
    for (let attempt = 0; ; attempt++) {
      const copy = request.clone();
      let response: Response;
      try {
        response = await send(copy);
      } catch (error) {
        if (attempt >= retries || !repeatable || request.signal?.aborted) throw error;
        await sleep(Math.min(maxDelay, 250 * 2 ** attempt));
        continue;
      }
      if (attempt >= retries || !RETRY_STATUSES.has(response.status)) return response;
      const wait = retryAfterMs(response.headers.get('retry-after'));
      if (wait > maxDelay) return response;
      await response.body?.cancel();
      await sleep(wait);
    }
  };
}

type Call = <M extends HttpMethod>(method: M, path: string, options: unknown) => Promise<unknown>;
type Method<M extends HttpMethod> = <P extends PathsWith<M>>(
  path: P,
  ...options: Init<P, M>
) => Promise<ResultOf<P, M>>;
/** A list path: a GET whose answer is `{data: [...], meta: {next_cursor}}`. */
export type ListPath = {
  [P in PathsWith<'get'>]: ResultOf<P, 'get'> extends { data: unknown[]; meta: { next_cursor: string | null } }
    ? P
    : never;
}[PathsWith<'get'>];
type ItemOf<P extends ListPath> = ResultOf<P, 'get'> extends { data: (infer T)[] } ? T : never;

/**
 * The client. Every operation of the API, typed from the OpenAPI document:
 * `await client.POST('/v1/resources', { body: { name: 'Docs', type: 'standard' } })` resolves to the
 * answer's body or throws `ApiError`. `client.list('/v1/resources', …)` walks every page.
 */
export class WorkspaceClient {
  /** The underlying openapi-fetch client (answers `{data, error, response}` instead of throwing). */
  readonly raw: Client<paths, 'application/json'>;
  readonly GET: Method<'get'>;
  readonly POST: Method<'post'>;
  readonly PUT: Method<'put'>;
  readonly PATCH: Method<'patch'>;
  readonly DELETE: Method<'delete'>;

  constructor(options: ClientOptions) {
    if (!options.key) throw new TypeError('WorkspaceClient needs an API key.');
    if (!options.baseUrl) throw new TypeError('WorkspaceClient needs the base URL of the server.');
    this.raw = createOpenApiClient<paths, 'application/json'>({
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
      fetch: retryingFetch(options),
    });
    const call: Call = async (method, path, opts) => {
      const raw = this.raw as unknown as Record<string, (p: string, o: unknown) => Promise<Outcome>>;
      const fn = raw[method.toUpperCase()] as (p: string, o: unknown) => Promise<Outcome>;
      const { data, error, response } = await fn.call(this.raw, path, opts);
      if (!response.ok) throw toApiError(response, error);
      return response.status === 204 ? undefined : data;
    };
    this.GET = ((path: string, opts?: unknown) => call('get', path, opts)) as Method<'get'>;
    this.POST = ((path: string, opts?: unknown) => call('post', path, opts)) as Method<'post'>;
    this.PUT = ((path: string, opts?: unknown) => call('put', path, opts)) as Method<'put'>;
    this.PATCH = ((path: string, opts?: unknown) => call('patch', path, opts)) as Method<'patch'>;
    this.DELETE = ((path: string, opts?: unknown) => call('delete', path, opts)) as Method<'delete'>;
  }

  /**
   * Every item of a paged list, page after page (`next_cursor`), fetched as the loop asks for them:
   * `for await (const r of client.list('/v1/resources', { params: { query: { status: 'active' } } }))`.
   */
  async *list<P extends ListPath>(path: P, ...options: Init<P, 'get'>): AsyncGenerator<ItemOf<P>, void, undefined> {
    const init = (options[0] ?? {}) as { params?: { query?: Record<string, unknown> } };
    let query: Record<string, unknown> = { ...init.params?.query };
    for (;;) {
      const page = (await (this.GET as (p: string, o: unknown) => Promise<unknown>)(path, {
        ...init,
        params: { ...init.params, query },
      })) as { data: ItemOf<P>[]; meta: { next_cursor: string | null } };
      yield* page.data;
      if (!page.meta.next_cursor) return;
      const { offset: _offset, ...rest } = query;
      query = { ...rest, cursor: page.meta.next_cursor };
    }
  }

  /** `client.resources.list({status: 'active'})`: the same walk as `list('/v1/resources', …)`. */
  readonly resources = {
    list: (query: NonNullable<CallOptions<'/v1/resources', 'get'>['params']>['query'] = {}) =>
      this.list('/v1/resources', { params: { query } }),
  };
}

interface Outcome {
  data?: unknown;
  error?: unknown;
  response: Response;
}

function toApiError(response: Response, error: unknown): ApiError {
  const body = (error as { error?: ErrorBody } | undefined)?.error;
  if (body && typeof body.code === 'string') return new ApiError(response.status, body, response.headers);
  const fallback: ErrorBody = {
    code: `http_${response.status}`,
    message: typeof error === 'string' && error ? error.slice(0, 500) : response.statusText || 'No error body.',
    request_id: response.headers.get('x-request-id') ?? '',
  };
  return new ApiError(response.status, fallback, response.headers);
}

/** Shorthand for `new WorkspaceClient(options)`. */
export function createClient(options: ClientOptions): WorkspaceClient {
  return new WorkspaceClient(options);
}
