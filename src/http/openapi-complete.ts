import { BODY_OPTIONAL } from '../kernel/schemas.js';

/**
 * Completes the generated OpenAPI document with what every `/v1` operation shares, so that the
 * document says everything the server does and routes added later are covered without edits:
 * the response headers (request id, rate limit, `Retry-After`, `Idempotent-Replayed`), the
 * `Idempotency-Key` request header of every POST, the error statuses that the cross-cutting
 * plugins can answer on any operation, an `operationId` derived from method and path where a
 * route declares none, and the global tag list. Rules: docs/api.md.
 */

type Json = Record<string, unknown>;
interface Operation extends Json {
  operationId?: string;
  tags?: string[];
  parameters?: Json[];
  responses: Record<string, Json>;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const;

const TAG_DESCRIPTIONS: Record<string, string> = {
  Users: 'The members of the workspace and the caller’s own profile.',
  Resources: 'The workspace’s resources: create, read, update, archive, delete.',
  Webhooks: 'Endpoints that receive signed event deliveries, and their delivery logs.',
  Events: 'The record of every change, kept 30 days; the same objects that webhooks receive.',
  Deliveries: 'Every delivery attempt of every endpoint, with filters and retries.',
  Keys: 'API keys: list, create, revoke and roll them.',
  Workspace: 'The workspace itself: scheduling its deletion (docs/data-lifecycle.md#deleting-a-workspace).',
};

const header = (description: string, schema: Json, required = true) => ({ description, required, schema });
const Seconds = { type: 'integer', format: 'int32', minimum: 0, maximum: 2_147_483_647 };

export const SHARED_HEADERS: Record<string, Json> = {
  XRequestId: header('The request id (`req_…`, or the caller’s own sane `X-Request-Id`); also in error bodies.', {
    type: 'string',
    maxLength: 128,
    pattern: '^[A-Za-z0-9._:-]{1,128}$',
  }),
  XRateLimitLimit: header('Requests allowed per window for this API key.', Seconds),
  XRateLimitRemaining: header('Requests left in the current window.', Seconds),
  XRateLimitReset: header('Seconds until the current window ends.', Seconds),
  RetryAfter: header('Seconds to wait before retrying.', Seconds),
  IdempotentReplayed: header(
    '`true` when this is the stored answer to an earlier request with the same `Idempotency-Key`.',
    { type: 'string', enum: ['true'] },
    false,
  ),
};

const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retried POST safe: the first completed answer for this key is stored for 24 h per workspace and ' +
    'environment and replayed for the same request (409 `idempotency_key_reused` for a different one, ' +
    '409 `idempotency_key_in_use` while the first still runs). See docs/api.md#idempotency.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]{1,255}$' },
};

/** Error statuses any authenticated operation can answer, from the plugins before the handler. */
const COMMON_ERRORS: Record<string, string> = {
  '400': 'validation_error (with `details`) or invalid_json.',
  '401': 'missing_token, invalid_token, expired_token or workspace_deleted.',
  '403': 'insufficient_scope: the key’s scopes or its owner’s role do not allow this.',
  '408': 'request_timeout: the request was not received in time (answered by the HTTP parser, before routing).',
  '413': 'payload_too_large: the body is over 1 MiB.',
  '415': 'unsupported_media_type: a body that is not `application/json`.',
  '431': 'headers_too_large: the request line and headers are over 16 KiB (answered before routing).',
  '429': 'rate_limited: this API key used up its window; see `Retry-After`.',
  '500': 'internal_error: a fault on the server side; the log has the details under the request id.',
  '503': 'service_unavailable: the database is unreachable or busy; nothing was written. Retry after `Retry-After`.',
};

/** Answered on the raw socket before Fastify sees the request: no rate limit ran (src/http/protocol.ts). */
const BEFORE_ROUTING = new Set(['408', '431']);

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
/** A 404 for a path the router refuses (an id too long, broken %-encoding) comes before authentication. */
const notBeforeAuth = (name: string) => ({
  ...SHARED_HEADERS[name],
  required: false,
  description: `${SHARED_HEADERS[name]?.description} Absent on a 404 for a path refused before authentication.`,
});
const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };

/** camelCase of method and path: `GET /v1/resources/{id}` → `getResourcesById`. */
export function deriveOperationId(method: string, path: string): string {
  const words = path
    .replace(/^\/v1\//, '')
    .split('/')
    .flatMap((seg) => (seg.startsWith('{') ? ['by', seg.slice(1, -1)] : [seg]))
    .flatMap((seg) => seg.split(/[^A-Za-z0-9]+/))
    .filter(Boolean);
  return [method, ...words].map((w, i) => (i === 0 ? w : w.charAt(0).toUpperCase() + w.slice(1))).join('');
}

function completeOperation(method: string, path: string, op: Operation): void {
  op.operationId ??= deriveOperationId(method, path);
  if (op[BODY_OPTIONAL] === true) {
    const body = op.requestBody as Json | undefined;
    if (body) body.required = false;
    delete op[BODY_OPTIONAL];
  }
  if (method === 'post') op.parameters = [...(op.parameters ?? []), { $ref: '#/components/parameters/IdempotencyKey' }];
  const hasPathParams = path.includes('{');
  const extra: Record<string, string> = { ...COMMON_ERRORS };
  if (hasPathParams) extra['404'] = 'not_found: no such object in this workspace and environment.';
  if (method === 'post') extra['409'] = 'idempotency_key_reused or idempotency_key_in_use (see `Idempotency-Key`).';
  for (const [status, description] of Object.entries(extra)) {
    op.responses[status] ??= { description, content: errorContent };
  }
  for (const [status, response] of Object.entries(op.responses)) {
    const headers: Record<string, Json> = { 'X-Request-Id': ref('XRequestId') };
    // A 401 has no key to count against; a 5xx may come before the rate limit ran.
    if (status !== '401' && !status.startsWith('5') && !BEFORE_ROUTING.has(status)) {
      for (const name of ['Limit', 'Remaining', 'Reset']) {
        headers[`X-RateLimit-${name}`] =
          status === '404' ? notBeforeAuth(`XRateLimit${name}`) : ref(`XRateLimit${name}`);
      }
    }
    if (status === '429' || status === '503') headers['Retry-After'] = ref('RetryAfter');
    if (method === 'post' && status !== '401' && !status.startsWith('5') && !BEFORE_ROUTING.has(status)) {
      headers['Idempotent-Replayed'] = ref('IdempotentReplayed');
    }
    response.headers = { ...headers, ...(response.headers as Json | undefined) };
  }
}

/** Completes the document in place (see the file comment) and returns it. */
export function completeOpenApi<T extends Json>(doc: T): T {
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Operation>>;
  const tags = new Set<string>();
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      if (path.startsWith('/v1/')) completeOperation(method, path, op);
      for (const tag of op.tags ?? []) tags.add(tag);
    }
  }
  const components = (doc.components ?? {}) as Json;
  components.headers = { ...(components.headers as Json | undefined), ...SHARED_HEADERS };
  components.parameters = { ...(components.parameters as Json | undefined), IdempotencyKey: IDEMPOTENCY_KEY };
  // Public API of a self-hosted server, not an internal one (OWASP inventory rule).
  for (const server of (doc.servers ?? []) as Json[]) server['x-internal'] ??= false;
  Object.assign(doc, {
    components,
    tags: [...tags].sort().map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? `${name} operations.` })),
  });
  return doc;
}
