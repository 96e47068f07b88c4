import { type Static, Type } from '@sinclair/typebox';
import { PageQueryProps, Timestamp } from '../../kernel/schemas.js';

const QueryTime = Type.String({
  format: 'date-time',
  maxLength: 64,
  examples: ['2026-11-22T00:00:00.000Z'],
});
const EnvParam = Type.Union([Type.Literal('live'), Type.Literal('test')], {
  description: "Which environment's requests (default: the caller's).",
});

export const UsageQuerySchema = Type.Object(
  {
    from: Type.Optional({
      ...QueryTime,
      description: 'Start, inclusive (default: 24 h before `to`); cut to the period.',
    }),
    to: Type.Optional({ ...QueryTime, description: 'End, exclusive (default: now).' }),
    granularity: Type.Optional(
      Type.Union([Type.Literal('minute'), Type.Literal('hour'), Type.Literal('day')], {
        description:
          'Period of each point (default hour). Minutes are kept 48 h and hours 90 days; older periods show at the start of the hour or day they were rolled into.',
      }),
    ),
    group_by: Type.Optional(
      Type.Union([Type.Literal('key'), Type.Literal('route'), Type.Literal('status')], {
        description: 'One series per key id, route template or status code; one series for all without it.',
      }),
    ),
    env: Type.Optional(EnvParam),
  },
  { additionalProperties: false },
);
export type UsageQuery = Static<typeof UsageQuerySchema>;

const Ms = Type.Union([Type.Number({ minimum: 0 }), Type.Null()]);
const UsageStatsProps = {
  count: Type.Integer({ minimum: 0, description: 'Requests answered.' }),
  errors: Type.Integer({ minimum: 0, description: 'Of which answered 4xx or 5xx (429 included).' }),
  latency_avg_ms: Ms,
  p50_ms: { ...Ms, description: 'Latency percentiles, from fixed log-spaced buckets (within a factor of 2).' },
  p95_ms: Ms,
  p99_ms: Ms,
};

export const UsageSeriesSchema = Type.Object(
  {
    from: Timestamp,
    to: Timestamp,
    granularity: Type.String(),
    group_by: Type.Union([Type.String(), Type.Null()]),
    env: Type.String(),
    series: Type.Array(
      Type.Object({
        group: Type.Union([Type.String(), Type.Null()], {
          description: 'The key id, route (`GET /v1/resources/:id`) or status of this series; null without group_by.',
        }),
        total: Type.Object(UsageStatsProps),
        points: Type.Array(
          Type.Object({ t: { ...Timestamp, description: 'Start of the period.' }, ...UsageStatsProps }),
          {
            description: 'Periods with at least one request, oldest first; periods without requests are left out.',
          },
        ),
      }),
    ),
  },
  { $id: 'UsageSeries', title: 'UsageSeries' },
);
export type UsageSeries = Static<typeof UsageSeriesSchema>;

export const RequestLogQuerySchema = Type.Object(
  {
    ...PageQueryProps,
    status: Type.Optional(
      Type.String({
        pattern: '^[45](xx|[0-9]{2})$',
        maxLength: 3,
        description: '`4xx`, `5xx` or one status such as `429`.',
      }),
    ),
    code: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'Error code, such as `validation_error`.' }),
    ),
    key_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    route: Type.Optional(
      Type.String({ minLength: 1, maxLength: 256, description: 'Route template, such as `/v1/resources/:id`.' }),
    ),
    request_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    from: Type.Optional(QueryTime),
    to: Type.Optional(QueryTime),
  },
  { additionalProperties: false },
);
export type RequestLogQueryParams = Static<typeof RequestLogQuerySchema>;

export const LoggedRequestSchema = Type.Object(
  {
    id: Type.String({ examples: ['rql_01JD3K8Z6W6J9Q4X1V5N2M7P8R'] }),
    request_id: Type.String({ description: 'The X-Request-Id of the failed request.' }),
    created_at: Timestamp,
    key_id: Type.String(),
    env: Type.String(),
    method: Type.String(),
    route: Type.String({ description: 'Route template.' }),
    path: Type.String(),
    status: Type.Integer(),
    error_code: Type.Union([Type.String(), Type.Null()]),
    error_message: Type.Union([Type.String(), Type.Null()]),
    latency_ms: Type.Number({ minimum: 0 }),
    body: Type.Union([Type.String(), Type.Null()], {
      description:
        'The request body, up to 8 KiB, with keys and secrets replaced by `[redacted]`; headers are never kept.',
    }),
  },
  { $id: 'LoggedRequest', title: 'LoggedRequest' },
);
export type LoggedRequest = Static<typeof LoggedRequestSchema>;
