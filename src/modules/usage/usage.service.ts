import type { Db } from '../../db/dialect.js';
import type { Env } from '../../db/types.js';
import type { Clock } from '../../kernel/clock.js';
import { isoAt } from '../../kernel/clock.js';
import { fieldError } from '../../kernel/errors.js';
import type { Principal, SystemActor } from '../../kernel/principal.js';
import { encodeCursor, type Page, type PageRequest } from '../../lib/paging.js';
import { purgeInBatches } from '../../platform/batched-purge.js';
import type { Unit, WriteTx } from '../../platform/unit-of-work.js';
import { BUCKET_COUNT, quantile } from './buckets.js';
import { createUsageMeter, type UsageMeter } from './meter.js';
import {
  countBillable,
  deleteRequestLogBefore,
  deleteUsageBefore,
  type Granularity,
  listRequestLog,
  readUsage,
  rollUp,
  type UsageCursor,
  usageExportBatch,
  writeBatch,
} from './usage.repository.js';
import type { LoggedRequest, UsageQuery, UsageSeries } from './usage.schemas.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const STEP: Record<Granularity, number> = { minute: MINUTE, hour: HOUR, day: DAY };
/** docs/usage.md: minutes become hours after 48 h, hours become days after 90 days, days go after 400. */
export const RETENTION = { minutes: 48 * HOUR, hours: 90 * DAY, days: 400 * DAY } as const;
/** Most periods one /usage answer may span. */
export const MAX_POINTS = 10_000;

export interface RequestLogQuery {
  status?: string;
  code?: string;
  key_id?: string;
  route?: string;
  request_id?: string;
  from?: string;
  to?: string;
}

/** Metering, its queries and its upkeep (docs/usage.md); callable from routes, the CLI and the worker. */
export function createUsageService(deps: {
  db: Db;
  clock: Clock;
  /** How many days failed requests are kept (REQUEST_LOG_RETENTION_DAYS, docs/usage.md#request-log). */
  requestLogRetentionDays: number;
}) {
  const { db, clock } = deps;

  return {
    /**
     * A batch of the workspace's usage rows (per minute, hour or day, as rolled up so far) after `after` (the cursor this gave;
     * null: from the first), in key order: an export's walk.
     */
    async exportBatch(workspaceId: string, after: string | null, limit: number) {
      const cursor = after === null ? null : (JSON.parse(after) as UsageCursor);
      const rows = await usageExportBatch(db, workspaceId, cursor, limit);
      const last = rows.at(-1);
      return {
        rows: rows.map(({ workspace_id: _w, ...r }) => ({
          ...r,
          count: Number(r.count),
          latency_sum_ms: Number(r.latency_sum_ms),
        })),
        next: last
          ? JSON.stringify([
              last.env,
              last.granularity,
              last.period_start,
              last.key_id,
              last.route,
              Number(last.status),
            ])
          : null,
      };
    },
    /**
     * This process's meter (docs/usage.md): it counts requests in memory and flushes them every `flushMs` with
     * `u` (the `meter` actor's door), moving keys' last use (`recordUse`, the keys module's) in the same change.
     */
    meterWith(
      u: Unit,
      opts: {
        flushMs: number;
        /** Keep the unflushed billable counts per workspace for the free cap (PLAN_LIMITS=on). */
        trackBillable?: boolean;
        recordUse: (trx: WriteTx, lastUsed: ReadonlyMap<string, number>) => Promise<void>;
        /** Of these workspaces, those being deleted or gone: what was counted for them is dropped, not written. */
        deletingAmong?: (trx: WriteTx, ids: readonly string[]) => Promise<ReadonlySet<string>>;
        onFlushError?(err: unknown): void;
      },
    ): UsageMeter {
      return createUsageMeter({
        clock,
        flushMs: opts.flushMs,
        trackBillable: opts.trackBillable,
        // Not changesKeys: last_used_at does not change whether a key verifies, so cached keys stay valid.
        write: (batch) =>
          u.run(async ({ trx }) => {
            const ids = new Set([
              ...batch.cells.map((c) => c.workspaceId),
              ...batch.failures.map((f) => f.workspaceId),
            ]);
            const gone = opts.deletingAmong ? await opts.deletingAmong(trx, [...ids]) : new Set<string>();
            await writeBatch(
              trx,
              gone.size === 0
                ? batch
                : {
                    ...batch,
                    cells: batch.cells.filter((c) => !gone.has(c.workspaceId)),
                    failures: batch.failures.filter((f) => !gone.has(f.workspaceId)),
                  },
            );
            await opts.recordUse(trx, batch.lastUsed);
          }),
        onError: opts.onFlushError,
      });
    },

    /** Time series of the caller's workspace (docs/usage.md#get-v1usage); throws ValidationError for a bad range. */
    async series(p: Principal, q: UsageQuery): Promise<UsageSeries> {
      const granularity = q.granularity ?? 'hour';
      const to = q.to === undefined ? clock.now() : Date.parse(instant('to', q.to));
      const from = q.from === undefined ? to - DAY : Date.parse(instant('from', q.from));
      if (!(from < to)) throw fieldError('to', 'invalid_range', 'to must be after from.');
      const step = STEP[granularity];
      const start = from - (from % step);
      const points = Math.ceil((to - start) / step);
      if (points > MAX_POINTS) {
        throw fieldError(
          'granularity',
          'too_many_points',
          `from..to at ${granularity} granularity is ${points} points; at most ${MAX_POINTS}: use a coarser granularity or a shorter range.`,
        );
      }
      const env: Env = q.env ?? p.env;
      const rows = await readUsage(db, { workspaceId: p.workspaceId, env }, isoAt(start), isoAt(to));
      type Acc = { count: number; errors: number; sum: number; buckets: number[] };
      const groups = new Map<string, Map<number, Acc>>();
      const groupOf = (r: (typeof rows)[number]) =>
        q.group_by === 'key'
          ? r.keyId
          : q.group_by === 'route'
            ? r.route
            : q.group_by === 'status'
              ? String(r.status)
              : '';
      for (const r of rows) {
        const t = Date.parse(r.periodStart);
        const period = t - (t % step);
        const g = groupOf(r);
        let series = groups.get(g);
        if (!series) {
          series = new Map();
          groups.set(g, series);
        }
        let acc = series.get(period);
        if (!acc) {
          acc = { count: 0, errors: 0, sum: 0, buckets: new Array(BUCKET_COUNT).fill(0) };
          series.set(period, acc);
        }
        acc.count += r.count;
        if (r.status >= 400) acc.errors += r.count;
        acc.sum += r.latencySumMs;
        for (let i = 0; i < BUCKET_COUNT; i++) acc.buckets[i] = (acc.buckets[i] ?? 0) + (r.buckets[i] ?? 0);
      }
      const stats = (a: Acc) => ({
        count: a.count,
        errors: a.errors,
        latency_avg_ms: a.count === 0 ? null : Math.round((a.sum / a.count) * 1000) / 1000,
        p50_ms: quantile(a.buckets, 0.5),
        p95_ms: quantile(a.buckets, 0.95),
        p99_ms: quantile(a.buckets, 0.99),
      });
      const series = [...groups]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([group, byPeriod]) => {
          const total: Acc = { count: 0, errors: 0, sum: 0, buckets: new Array(BUCKET_COUNT).fill(0) };
          const pts = [...byPeriod]
            .sort(([a], [b]) => a - b)
            .map(([t, a]) => {
              total.count += a.count;
              total.errors += a.errors;
              total.sum += a.sum;
              for (let i = 0; i < BUCKET_COUNT; i++) total.buckets[i] = (total.buckets[i] ?? 0) + (a.buckets[i] ?? 0);
              return { t: isoAt(t), ...stats(a) };
            });
          return { group: q.group_by === undefined ? null : group, total: stats(total), points: pts };
        });
      return { from: isoAt(start), to: isoAt(to), granularity, group_by: q.group_by ?? null, env, series };
    },

    /** Failed requests of the caller's workspace, newest first; members see their own keys' (docs/usage.md#request-log). */
    async requests(p: Principal, q: RequestLogQuery, page: PageRequest): Promise<Page<LoggedRequest>> {
      const status = q.status === undefined ? undefined : statusRange(q.status);
      const { rows, total } = await listRequestLog(
        db,
        {
          workspaceId: p.workspaceId,
          env: p.env,
          userId: p.role === 'admin' ? undefined : (p.userId ?? undefined),
          status,
          code: q.code,
          keyId: q.key_id,
          route: q.route,
          requestId: q.request_id,
          from: q.from === undefined ? undefined : instant('from', q.from),
          to: q.to === undefined ? undefined : instant('to', q.to),
        },
        page,
      );
      const more = rows.length > page.limit;
      const items = rows.slice(0, page.limit).map(
        (r): LoggedRequest => ({
          id: r.id,
          request_id: r.request_id,
          created_at: isoAt(Date.parse(String(r.created_at))),
          key_id: r.key_id,
          env: r.env,
          method: r.method,
          route: r.route,
          path: r.path,
          status: Number(r.status),
          error_code: r.error_code,
          error_message: r.error_message,
          latency_ms: Number(r.latency_ms),
          body: r.body,
        }),
      );
      const offset = page.afterId === null ? page.offset : (page.afterOffset ?? 0);
      const last = items[items.length - 1];
      return {
        items,
        total,
        limit: page.limit,
        offset,
        nextCursor: more && last ? encodeCursor(last.id, offset + items.length) : null,
      };
    },

    /**
     * Billable live requests of a workspace in [from, to) (ms; docs/billing.md#billable-requests):
     * answered with a status other than 429 and below 500, as flushed so far (the current few seconds
     * of each process are not in it yet). Minute, hour and day rows are all counted, so `from` and `to`
     * should fall on whole days once the minutes are rolled up (billing periods start at midnight UTC).
     */
    billableCount(workspaceId: string, from: number, to: number): Promise<number> {
      return countBillable(db, workspaceId, isoAt(from), isoAt(to));
    },

    /**
     * The periodic upkeep (docs/usage.md#rollups-and-retention): minutes older than 48 h into hours, hours older
     * than 90 days into days, days older than 400 days removed, and failed requests older than REQUEST_LOG_RETENTION_DAYS
     * in batches (one `request_log.purged` entry per workspace where some were).
     * Returns the rows removed. Each rollup is one transaction, so the totals never change.
     */
    async rollup(u: Unit<SystemActor>): Promise<number> {
      const now = clock.now();
      const hourCut = now - RETENTION.minutes;
      const dayCut = now - RETENTION.hours;
      let removed = 0;
      removed += await u.run(({ trx }) =>
        rollUp(trx, 'minute', 'hour', isoAt(hourCut - (hourCut % HOUR)), (iso) => `${iso.slice(0, 13)}:00:00.000Z`),
      );
      removed += await u.run(({ trx }) =>
        rollUp(trx, 'hour', 'day', isoAt(dayCut - (dayCut % DAY)), (iso) => `${iso.slice(0, 10)}T00:00:00.000Z`),
      );
      const dayRowCut = isoAt(now - RETENTION.days);
      removed += await purgeInBatches(u, {
        action: 'usage.purged',
        target: 'usage',
        // Six conditions a row: 500 rows keep one statement's parameters well inside SQLite's and PostgreSQL's limits.
        limit: 500,
        steps: [{ name: 'usage_days', run: (trx, limit) => deleteUsageBefore(trx, 'day', dayRowCut, limit) }],
      });
      const logCut = isoAt(now - deps.requestLogRetentionDays * DAY);
      removed += await purgeInBatches(u, {
        action: 'request_log.purged',
        target: 'request_log',
        steps: [{ name: 'requests', run: (trx, limit) => deleteRequestLogBefore(trx, logCut, limit) }],
      });
      return removed;
    },
  };
}
export type UsageService = ReturnType<typeof createUsageService>;

/** A query time as ISO UTC; a 400 for one JavaScript cannot place (the schema checks the form). */
function instant(field: string, value: string): string {
  const t = Date.parse(value);
  if (Number.isNaN(t) || t < 0 || t > 253_402_300_799_999) {
    throw fieldError(field, 'invalid_value', `${field} must be a date-time between 1970 and 9999.`);
  }
  return isoAt(t);
}

/** `4xx`, `5xx` or one status such as `429`, as an inclusive range. */
function statusRange(s: string): { min: number; max: number } {
  const m = /^([45])(xx|\d\d)$/.exec(s);
  if (!m) throw fieldError('status', 'invalid_value', 'status must be 4xx, 5xx or a status code from 400 to 599.');
  if (m[2] === 'xx') return { min: Number(m[1]) * 100, max: Number(m[1]) * 100 + 99 };
  return { min: Number(s), max: Number(s) };
}
