import { type TSchema, Type } from '@sinclair/typebox';
import { ROLES } from './roles.js';
import { CONTROL_CHARACTER_ISSUE, CONTROL_CLASS } from './text.js';

/** The error body (docs/api.md#errors). */
export const ErrorSchema = Type.Object(
  {
    error: Type.Object({
      code: Type.String({ description: 'snake_case error code' }),
      message: Type.String(),
      request_id: Type.String({ description: 'req_… id, also in the X-Request-Id header' }),
      details: Type.Optional(
        Type.Array(
          Type.Object({
            field: Type.String({ examples: ['metadata.color'] }),
            issue: Type.String({ examples: ['too_long'] }),
            message: Type.String(),
          }),
        ),
      ),
    }),
  },
  { $id: 'Error', title: 'Error' },
);

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'validation_error or invalid_json',
  401: 'missing_token, invalid_token, expired_token or workspace_deleted',
  402: "payment_required: the workspace's subscription is unpaid (payments with Stripe; live keys only)",
  403: 'insufficient_scope',
  404: 'not_found',
  409: 'idempotency_key_reused or idempotency_key_in_use (see `Idempotency-Key`)',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited (with Retry-After)',
  503: 'service_unavailable',
};

/** Error responses for a route's schema, all with the error body. */
export function errorResponses(...statuses: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const s of statuses) out[s] = Type.Ref(ErrorSchema, { description: ERROR_DESCRIPTIONS[s] });
  return out;
}

/** Errors every authenticated route can answer. */
export const AUTHED_ERRORS = [400, 401, 402, 403, 429] as const;

/** `{ data: T }` envelope. */
export function DataOf<T extends TSchema>(schema: T) {
  return Type.Object({ data: schema });
}

export const PageMetaSchema = Type.Object({
  total: Type.Integer({
    format: 'int64',
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description: 'Matching records across all pages.',
  }),
  limit: Type.Integer({
    format: 'int32',
    minimum: 1,
    maximum: 100,
    description: 'Page size applied to this response.',
  }),
  offset: Type.Integer({
    format: 'int64',
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description: "Records before this page (on a cursor page: the walk's position, carried in the cursor).",
  }),
  next_cursor: Type.Union([Type.String({ maxLength: 512 }), Type.Null()], {
    description: 'Opaque token for `cursor=` to fetch the next page; null on the last page.',
  }),
});

/** `{ data: T[], meta }` list envelope (docs/api.md#lists-and-paging). */
export function ListOf<T extends TSchema>(schema: T) {
  return Type.Object({ data: Type.Array(schema, { maxItems: 100 }), meta: PageMetaSchema });
}

/**
 * `{ data: T[], meta }` for records kept a limited time: `meta.retention_days` says how many days the service
 * keeps them (docs/settings.md#retention), so a client can say so beside the list.
 */
export function RetainedListOf<T extends TSchema>(schema: T) {
  return Type.Object({
    data: Type.Array(schema, { maxItems: 100 }),
    meta: Type.Composite([
      PageMetaSchema,
      Type.Object({
        retention_days: Type.Integer({
          format: 'int32',
          minimum: 1,
          maximum: 36_500,
          description: 'How many days these records are kept before a job deletes them (an operator setting).',
        }),
      }),
    ]),
  });
}

/** Largest accepted `offset` (2^31 - 1); larger values are a 400, never clamped (docs/api.md#lists-and-paging). */
export const MAX_OFFSET = 2_147_483_647;

/** Paging query parameters (docs/api.md#lists-and-paging). */
export const PageQueryProps = {
  limit: Type.Optional(
    Type.Integer({
      format: 'int32',
      minimum: 1,
      maximum: 100,
      default: 20,
      description: 'Page size, 1..100 (default 20).',
    }),
  ),
  offset: Type.Optional(
    Type.Integer({
      format: 'int32',
      minimum: 0,
      maximum: MAX_OFFSET,
      description: 'Records to skip (default 0); not allowed with cursor.',
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 512,
      description: '`next_cursor` of the previous page (opaque).',
    }),
  ),
};

/** `order` of the lists that take it (docs/api.md#paging): oldest first unless `desc`. */
export const OrderQueryProps = {
  order: Type.Optional(
    Type.Union([Type.Literal('asc'), Type.Literal('desc')], {
      default: 'asc',
      description:
        '`asc` (default): oldest first; `desc`: newest first. A cursor continues in the order it was issued for; send the same order with it.',
    }),
  ),
};

export const Timestamp = Type.String({
  format: 'date-time',
  description: 'ISO 8601 UTC with milliseconds',
  examples: ['2026-11-22T10:15:30.123Z'],
});

/**
 * An id in a path: its prefix and 26 characters of Crockford base32. The pattern documents the
 * form; a path id that does not match names nothing and is a 404 like any unknown id
 * (docs/api.md#ids), so the params validator does not enforce it (http/validation.ts).
 */
export function IdString(prefix: string, example: string) {
  return Type.String({
    description: `${prefix}… id`,
    examples: [example],
    minLength: prefix.length + 26,
    maxLength: prefix.length + 26,
    pattern: `^${prefix}[0-9A-HJKMNP-TV-Z]{26}$`,
  });
}

export function IdParam(prefix: string, example: string) {
  return Type.Object({ id: IdString(prefix, example) });
}

/**
 * Marker a route puts in its schema when its body may be left out (the server reads no body as `{}`);
 * @fastify/swagger copies `x-` keys to the operation and always marks a body as required, so
 * http/openapi-complete.ts turns the marker into `requestBody.required: false`.
 */
export const BODY_OPTIONAL = 'x-body-optional';

/**
 * A single-line name (docs/api.md#names): resource, user, key and workspace names, webhook labels.
 * Lengths count code points; control characters are refused with a 400 naming the field, so a
 * name can never break a line of an email header, a log or the CLI's tables.
 */
export function SingleLine(opts: { minLength: number; maxLength: number; description: string }) {
  return Type.String({
    ...opts,
    pattern: `^[^${CONTROL_CLASS.slice(1)}*$`,
    // What breaking the pattern means, for the validators' issue and message (http/validation.ts, lib/validate.ts).
    'x-issue': CONTROL_CHARACTER_ISSUE,
    'x-issue-expected': 'a single line of text, without control characters such as line breaks or tabs',
  });
}

/** A role (docs/api.md#keys-scopes-and-roles): members, keys, invites and single sign-on's default. */
export const RoleSchema = Type.Union(ROLES.map((r) => Type.Literal(r)));

/** A person's name (docs/api.md#names). */
export const UserName = SingleLine({
  minLength: 1,
  maxLength: 100,
  description: '1..100 characters on one line (docs/api.md#names).',
});

/** An email address as the console's forms and the CLI take it. */
export const Email = Type.String({ minLength: 3, maxLength: 254, format: 'email' });
