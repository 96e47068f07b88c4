import { type RawBuilder, sql } from 'kysely';
import type { Db } from '../../db/dialect.js';
import type { Env, RequestLogTable, UsageCountsTable } from '../../db/types.js';
import { isoAt } from '../../kernel/clock.js';
import { ulid } from '../../kernel/ids.js';
import { countByWorkspace, PURGE_BATCH_ROWS } from '../../platform/batched-purge.js';
import type { WriteTx } from '../../platform/unit-of-work.js';
import { BUCKET_COUNT } from './buckets.js';
import type { UsageBatch } from './meter.js';

export type Granularity = 'minute' | 'hour' | 'day';

/** One stored period of one key, route and status, numbers read as numbers. */
export interface UsageRow {
  keyId: string;
  route: string;
  status: number;
  granularity: Granularity;
  periodStart: string;
  count: number;
  latencySumMs: number;
  buckets: number[];
}

const BUCKET_COLUMNS = Array.from({ length: BUCKET_COUNT }, (_, i) => `b${i}` as const);
const ADDED = ['count', 'latency_sum_ms', ...BUCKET_COLUMNS] as const;
const KEY_COLUMNS = ['workspace_id', 'env', 'granularity', 'period_start', 'key_id', 'route', 'status'] as const;
/** Rows per INSERT: 25 parameters each, far below either database's limit. */
const CHUNK = 200;

type NewUsage = Omit<UsageCountsTable, 'count'> & { count: number };

/**
 * Adds `rows` to what is stored (INSERT … ON CONFLICT DO UPDATE SET count = count + excluded.count …),
 * so processes writing the same period add up. Rows go in primary-key order, so two PostgreSQL
 * transactions adding to the same rows take their locks in the same order and never deadlock.
 */
export async function addUsage(trx: WriteTx, rows: NewUsage[]): Promise<void> {
  rows.sort((a, b) => compareKeys(a, b));
  const set = Object.fromEntries(
    ADDED.map((c) => [c, sql<number>`${sql.ref(`usage_counts.${c}`)} + ${sql.ref(`excluded.${c}`)}`]),
  ) as Record<(typeof ADDED)[number], RawBuilder<number>>;
  for (let i = 0; i < rows.length; i += CHUNK) {
    await trx
      .insertInto('usage_counts')
      .values(rows.slice(i, i + CHUNK))
      .onConflict((oc) => oc.columns([...KEY_COLUMNS]).doUpdateSet(set))
      .execute();
  }
}

function compareKeys(a: NewUsage, b: NewUsage): number {
  for (const c of KEY_COLUMNS) {
    const x = a[c];
    const y = b[c];
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
}

/**
 * Text as the request log keeps it: a NUL character, which PostgreSQL's text type cannot hold (a
 * failed request may well carry one), is written as the six characters `\\u0000`, on both databases.
 */
export function storable(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\\u0000') : text;
}

/** Writes one meter flush's counts and failed requests (keys' last use is the keys module's: usage.service.ts). */
export async function writeBatch(trx: WriteTx, batch: UsageBatch): Promise<void> {
  await addUsage(
    trx,
    batch.cells.map((c) => {
      const row: NewUsage = {
        workspace_id: c.workspaceId,
        env: c.env,
        key_id: c.keyId,
        route: c.route,
        status: c.status,
        granularity: 'minute',
        period_start: isoAt(c.minute),
        count: c.count,
        latency_sum_ms: c.latencySumMs,
      };
      for (let i = 0; i < BUCKET_COUNT; i++) row[`b${i}`] = c.buckets[i] ?? 0;
      return row;
    }),
  );
  for (let i = 0; i < batch.failures.length; i += 100) {
    const rows: RequestLogTable[] = batch.failures.slice(i, i + 100).map((f) => ({
      id: `rql_${ulid(f.at)}`,
      request_id: f.requestId,
      workspace_id: f.workspaceId,
      env: f.env,
      key_id: f.keyId,
      user_id: f.userId,
      method: storable(f.method),
      route: storable(f.route),
      path: storable(f.path),
      status: f.status,
      error_code: f.errorCode === null ? null : storable(f.errorCode),
      error_message: f.errorMessage === null ? null : storable(f.errorMessage),
      latency_ms: f.latencyMs,
      body: f.body === null ? null : storable(f.body),
      created_at: isoAt(f.at),
    }));
    await trx.insertInto('request_log').values(rows).execute();
  }
}

/** Moves `from` rows older than `before` into `to` periods (start cut by `cut`); returns rows removed. */
export async function rollUp(
  trx: WriteTx,
  from: Granularity,
  to: Granularity,
  before: string,
  cut: (iso: string) => string,
): Promise<number> {
  // DELETE … RETURNING: exactly the rows removed are added up, whoever else runs the rollup.
  const removed = await trx
    .deleteFrom('usage_counts')
    .where('granularity', '=', from)
    .where('period_start', '<', before)
    .returningAll()
    .execute();
  const sums = new Map<string, NewUsage>();
  for (const r of removed) {
    const period = cut(r.period_start);
    const id = `${r.workspace_id}|${r.env}|${r.key_id}|${r.status}|${period}|${r.route}`;
    let s = sums.get(id);
    if (!s) {
      s = { ...r, granularity: to, period_start: period, count: 0, latency_sum_ms: 0 };
      for (const c of BUCKET_COLUMNS) s[c] = 0;
      sums.set(id, s);
    }
    s.count += Number(r.count);
    s.latency_sum_ms += Number(r.latency_sum_ms);
    for (const c of BUCKET_COLUMNS) s[c] = Number(s[c]) + Number(r[c]);
  }
  await addUsage(trx, [...sums.values()]);
  return removed.length;
}

/**
 * Deletes up to `limit` of the `granularity` rows older than `before` (by their primary key, oldest first);
 * returns how many per workspace.
 */
export async function deleteUsageBefore(
  trx: WriteTx,
  granularity: Granularity,
  before: string,
  limit = PURGE_BATCH_ROWS,
): Promise<Map<string, number>> {
  const rows = await trx
    .selectFrom('usage_counts')
    .select(['workspace_id', 'env', 'period_start', 'key_id', 'route', 'status'])
    .where('granularity', '=', granularity)
    .where('period_start', '<', before)
    .orderBy('period_start')
    .limit(limit)
    .execute();
  if (rows.length === 0) return new Map();
  await trx
    .deleteFrom('usage_counts')
    .where('granularity', '=', granularity)
    .where((eb) =>
      eb.or(
        rows.map((r) =>
          eb.and([
            eb('workspace_id', '=', r.workspace_id),
            eb('env', '=', r.env),
            eb('period_start', '=', r.period_start),
            eb('key_id', '=', r.key_id),
            eb('route', '=', r.route),
            eb('status', '=', r.status),
          ]),
        ),
      ),
    )
    .execute();
  return countByWorkspace(rows);
}

/** Deletes up to `limit` of the failed requests logged before `before`; returns how many per workspace. */
export async function deleteRequestLogBefore(
  db: WriteTx,
  before: string,
  limit = PURGE_BATCH_ROWS,
): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('request_log')
    .select(['id', 'workspace_id'])
    .where('created_at', '<', before)
    .limit(limit)
    .execute();
  if (rows.length === 0) return new Map();
  await db
    .deleteFrom('request_log')
    .where(
      'id',
      'in',
      rows.map((r) => r.id),
    )
    .execute();
  return countByWorkspace(rows);
}

/** Every stored period of a workspace and environment starting in [from, to), any granularity. */
export async function readUsage(db: Db, scope: { workspaceId: string; env: Env }, from: string, to: string) {
  const rows = await db
    .selectFrom('usage_counts')
    .selectAll()
    .where('workspace_id', '=', scope.workspaceId)
    .where('env', '=', scope.env)
    .where('period_start', '>=', from)
    .where('period_start', '<', to)
    .execute();
  return rows.map(
    (r): UsageRow => ({
      keyId: r.key_id,
      route: r.route,
      status: Number(r.status),
      granularity: r.granularity,
      periodStart: r.period_start,
      count: Number(r.count),
      latencySumMs: Number(r.latency_sum_ms),
      buckets: BUCKET_COLUMNS.map((c) => Number(r[c])),
    }),
  );
}

/**
 * Billable requests (docs/billing.md#billable-requests) of a workspace in [from, to): live, answered with a status other than 429
 * and below 500, at any granularity (rolled-up rows replace the minutes they were made of).
 */
export async function countBillable(db: Db, workspaceId: string, from: string, to: string): Promise<number> {
  const r = await db
    .selectFrom('usage_counts')
    .select((eb) => eb.fn.sum<number | string | null>('count').as('n'))
    .where('workspace_id', '=', workspaceId)
    .where('env', '=', 'live')
    .where('status', '<', 500)
    .where('status', '<>', 429)
    .where('period_start', '>=', from)
    .where('period_start', '<', to)
    .executeTakeFirst();
  return Number(r?.n ?? 0);
}

export interface RequestLogFilter {
  workspaceId: string;
  env: Env;
  /** Only requests made with keys of this user (members). */
  userId?: string;
  status?: { min: number; max: number };
  code?: string;
  keyId?: string;
  route?: string;
  requestId?: string;
  from?: string;
  to?: string;
}

/** A page of failed requests, newest first; `afterId` continues a cursor. */
export async function listRequestLog(
  db: Db,
  f: RequestLogFilter,
  page: { limit: number; offset: number; afterId: string | null },
) {
  let q = db.selectFrom('request_log').where('workspace_id', '=', f.workspaceId).where('env', '=', f.env);
  if (f.userId !== undefined) q = q.where('user_id', '=', f.userId);
  if (f.status) q = q.where('status', '>=', f.status.min).where('status', '<=', f.status.max);
  if (f.code !== undefined) q = q.where('error_code', '=', f.code);
  if (f.keyId !== undefined) q = q.where('key_id', '=', f.keyId);
  if (f.route !== undefined) q = q.where('route', '=', f.route);
  if (f.requestId !== undefined) q = q.where('request_id', '=', f.requestId);
  if (f.from !== undefined) q = q.where('created_at', '>=', f.from);
  if (f.to !== undefined) q = q.where('created_at', '<', f.to);
  const total = await q.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
  let items = q.selectAll().orderBy('id', 'desc');
  if (page.afterId !== null) items = items.where('id', '<', page.afterId);
  const rows = await items
    .offset(page.afterId === null ? page.offset : 0)
    .limit(page.limit + 1)
    .execute();
  return { rows, total: Number(total.n) };
}

/** Where an export's walk of usage rows stands: the last row's key (environment, granularity, period, key, route, status). */
export type UsageCursor = [string, string, string, string, string, number];

/**
 * A batch of the workspace's usage rows (per minute, hour or day, as rolled up so far) after `after`, in key order: an
 * export's keyset walk over the composite key.
 */
export async function usageExportBatch(
  db: Db,
  workspaceId: string,
  after: UsageCursor | null,
  limit: number,
): Promise<UsageCountsTable[]> {
  let q = db.selectFrom('usage_counts').selectAll().where('workspace_id', '=', workspaceId);
  if (after !== null) {
    const [e, g, p, k, r, st] = after;
    q = q.where(
      sql<boolean>`(env, granularity, period_start, key_id, route, status) > (${e}, ${g}, ${p}, ${k}, ${r}, ${st})`,
    );
  }
  // The primary key's order: each batch is a range of its index, never a sort of the workspace's rows.
  return q
    .orderBy('env')
    .orderBy('granularity')
    .orderBy('period_start')
    .orderBy('key_id')
    .orderBy('route')
    .orderBy('status')
    .limit(limit)
    .execute();
}
