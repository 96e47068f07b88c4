// Benchmark (docs/performance.md, "A write in one round trip"): the statements of a POST /v1/resources on
// PostgreSQL (the resource, its count, its event, one delivery, the NOTIFY, the revocation locks and the
// key's re-check, the audit_pending row) sent in six shapes, on the real schema (migrated by
// `migrateToLatest`), from 32 concurrent writers over a pool of 10 (the service's default):
//   a. one statement per round trip: BEGIN, eight named prepared statements, COMMIT (the service today,
//      without the integrations and enabled-webhooks reads, which come from a per-process cache);
//   b. one simple-query string `BEGIN; …; COMMIT` with the values as escaped literals, the re-check a
//      plpgsql function (lock, then read: each statement of the string and of the function has its own
//      snapshot) that raises when the key no longer holds;
//   c. one call of a plpgsql function that does all of it (a named prepared statement, in its own
//      implicit transaction);
//   d. one data-modifying CTE (a named prepared statement): the key read sits in the statement's one
//      snapshot, taken before the lock is granted, so a revocation that commits while the write waits
//      for the lock is not seen: it does not keep the revocation rule (D12) and is measured as a bound only;
//   e. like b, but each write a SQL `EXECUTE` of a statement `PREPARE`d once per connection;
//   f. node-postgres's pipeline mode: a's statements (the re-check as b's function) all written before
//      the first answer, each with its own Sync.
// Each shape is first checked to refuse a revoked key and to write nothing then, and to refuse a key
// revoked while the write waits for the key's lock (printed: d does not).
// Per round and shape: writes/s, client CPU µs per write (process.cpuUsage), the CPU per write of the
// pools' own PostgreSQL backends and of the server's WAL writer, checkpointer and background writer
// (/proc/<pid>/stat; other sessions' backends are not counted). Rounds are interleaved, the shapes' order
// rotated each round.
// Run: TEST_DATABASE_URL=postgres://… node --import tsx bench/pg-write-shapes.ts [--duration 3] [--rounds 3]
//      [--writers 32] [--pool 10] [--only a,b,c,d,e,f]
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { openStorage } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { systemClock } from '../src/kernel/clock.js';
import { newId } from '../src/kernel/ids.js';
import { canonicalJson } from '../src/lib/canonical-json.js';
import { createServices } from '../src/services.js';

const url = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
if (!url?.startsWith('postgres')) {
  process.stdout.write('bench/pg-write-shapes.ts: set TEST_DATABASE_URL (postgres://…); skipped.\n');
  process.exit(0);
}
const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] as string) : dflt;
};
const DURATION_MS = Number(arg('duration', '3')) * 1000;
const ROUNDS = Number(arg('rounds', '3'));
const WRITERS = Number(arg('writers', '32'));
const POOL = Number(arg('pool', '10'));
type Shape = 'a' | 'b' | 'c' | 'd' | 'e' | 'f';
const SHAPES = arg('only', 'a,b,c,d,e,f').split(',') as Shape[];
const NAMES: Record<Shape, string> = {
  a: 'a. one statement per round trip (today)',
  b: 'b. one simple-query string BEGIN; …; COMMIT',
  c: 'c. one plpgsql function call',
  d: 'd. one data-modifying CTE (not revocation-strict)',
  e: 'e. one simple-query string of EXECUTEs',
  f: 'f. pipeline of named statements (pg pipeline mode)',
};
const schema = `bench_shapes_${process.pid}`;

const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`create schema ${schema}`);

// The schema, a workspace with its live key and one enabled webhook, made by the service itself.
const storage = openStorage({ url, schema });
let ws: string;
let keyId: string;
let userId: string;
let revokedKeyId: string;
let webhookId: string;
try {
  await migrateToLatest(storage.db, storage.dialect);
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'warn',
    PLAN_LIMITS: 'off',
    WEBHOOK_ALLOW_INSECURE_URLS: 'true',
  } as unknown as NodeJS.ProcessEnv);
  const services = createServices({ storage, clock: systemClock, config });
  const made = await services.workspaces.create({ name: 'shapes', adminEmail: 'shapes@example.com' });
  const v = await services.keyRegistry.verify(`Bearer ${made.keys.live.key}`);
  if (!v.ok || v.principal.kind !== 'api_key') throw new Error('the workspace key did not verify');
  ws = v.principal.workspaceId;
  keyId = v.principal.keyId;
  userId = v.principal.userId;
  await services.webhooks.create(v.principal, { url: 'http://127.0.0.1:9/hook', events: ['resource.created'] });
} finally {
  await storage.close();
}
{
  const k = await admin.query(`select id from ${schema}.api_keys where workspace_id = $1 and id <> $2 limit 1`, [
    ws,
    keyId,
  ]);
  revokedKeyId = k.rows[0].id;
  await admin.query(`update ${schema}.api_keys set revoked_at = $1 where id = $2`, [
    new Date().toISOString(),
    revokedKeyId,
  ]);
  webhookId = (await admin.query(`select id from ${schema}.webhooks where workspace_id = $1`, [ws])).rows[0].id;
}

// The re-check (lock shared, then read with a snapshot of its own) is migration 026's `wsvc_hold_key`, which
// raises SQLSTATE WK401. Installed here as a migration would: shape c's whole write, and d's raise. A VOLATILE
// plpgsql function takes a fresh snapshot per statement.
await admin.query(`set search_path = ${schema}`);
await admin.query(`
create function wsvc_raise_unless(ok boolean) returns int language plpgsql volatile as $$
begin
  if not ok then raise exception 'credential ended' using errcode = 'WK401'; end if;
  return 1;
end $$`);
await admin.query(`
create function wsvc_create_resource(
  r_id text, r_ws text, r_env text, r_name text, r_type text, r_metadata text, r_time text, c_slot int,
  e_id text, e_payload text, d_ids text[], d_webhooks text[], k_key text, k_user text, k_now text,
  a_id text, a_time text, a_actor_type text, a_actor_id text, a_actor_name text, a_actor_user_id text,
  a_action text, a_changes text, a_request_id text, a_ip text, a_user_agent text, a_pos bigint
) returns void language plpgsql volatile as $$
begin
  insert into resources (id, workspace_id, env, name, type, status, metadata, created_at, updated_at)
    values (r_id, r_ws, r_env, r_name, r_type, 'active', r_metadata::jsonb, r_time::timestamptz, r_time::timestamptz);
  insert into resource_counts (workspace_id, env, status, type, slot, n) values (r_ws, r_env, 'active', r_type, c_slot, 1)
    on conflict (workspace_id, env, status, type, slot) do update set n = resource_counts.n + excluded.n;
  insert into events (id, workspace_id, env, type, resource_id, payload, created_at)
    values (e_id, r_ws, r_env, 'resource.created', r_id, e_payload, r_time::timestamptz);
  insert into deliveries (id, webhook_id, event_id, event_type, workspace_id, env, status, attempt_count,
      next_attempt_at, created_at, updated_at)
    select d.id, d.webhook_id, e_id, 'resource.created', r_ws, r_env, 'pending', 0, r_time::timestamptz,
      r_time::timestamptz, r_time::timestamptz
    from unnest(d_ids, d_webhooks) as d(id, webhook_id);
  if cardinality(d_ids) > 0 then perform pg_notify('wsvc_deliveries', ''); end if;
  perform wsvc_hold_key(k_key, k_user, k_now);
  insert into audit_pending (id, workspace_id, time, actor_type, actor_id, actor_name, actor_user_id, action,
      target_type, target_id, env, changes, request_id, ip, user_agent, pos)
    values (a_id, r_ws, a_time, a_actor_type, a_actor_id, a_actor_name, a_actor_user_id, a_action, 'resource', r_id,
      r_env, a_changes, a_request_id, a_ip, a_user_agent, a_pos);
end $$`);
// Check the column types the statements assume.
{
  const { rows } = await admin.query(
    `select table_name, column_name, data_type from information_schema.columns where table_schema = $1
     and table_name in ('resources', 'events', 'deliveries') and column_name in ('metadata', 'payload', 'created_at')`,
    [schema],
  );
  process.stdout.write(
    `column types: ${rows.map((r) => `${r.table_name}.${r.column_name} ${r.data_type}`).join(', ')}\n`,
  );
}

const pool = new pg.Pool({
  connectionString: url,
  max: POOL,
  idleTimeoutMillis: 0,
  options: `-c search_path=${schema}`,
});
// Shape f's pool: node-postgres's pipeline mode (`pipeline: true`, pg ≥ 8.20) writes a query without
// waiting for the previous one's answer.
const pipePool = new pg.Pool({
  connectionString: url,
  max: POOL,
  idleTimeoutMillis: 0,
  options: `-c search_path=${schema}`,
  pipeline: true,
} as pg.PoolConfig);
// Hold every connection once, so the pools keep them and their backends' pids are known.
const backendPids: number[] = [];
for (const p of SHAPES.includes('f') ? [pool, pipePool] : [pool]) {
  const held = await Promise.all(Array.from({ length: POOL }, () => p.connect()));
  for (const c of held) backendPids.push((await c.query('select pg_backend_pid() as pid')).rows[0].pid);
  for (const c of held) c.release();
}

// The server's own processes that work for every commit (the WAL writer, the checkpointer, the background
// writer): their CPU is added to the backends'. Other sessions' backends, which come and go, are not counted.
const auxPids: number[] = (
  await admin.query(
    `select pid from pg_stat_activity where backend_type in ('walwriter', 'checkpointer', 'background writer')`,
  )
).rows.map((r) => r.pid);

function cpuMsOf(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return ticks * 10;
}

/** One write's values, made as the service makes them. */
let pos = 0;
function write(key: string) {
  const now = Date.now();
  const time = new Date(now).toISOString();
  const id = newId('resource', now);
  const eventId = newId('event', now);
  const resource = {
    id,
    name: 'bench',
    type: 'standard',
    status: 'active',
    metadata: { team: 'core' },
    workspace_id: ws,
    env: 'live',
    created_at: time,
    updated_at: time,
  };
  return {
    id,
    time,
    metadata: JSON.stringify(resource.metadata),
    slot: Math.floor(Math.random() * 16),
    eventId,
    payload: JSON.stringify({
      id: eventId,
      event: 'resource.created',
      created_at: time,
      data: { resource_id: id, resource },
    }),
    deliveryId: newId('delivery', now),
    key,
    auditId: newId('audit', now),
    changes: canonicalJson({
      name: { after: 'bench', before: null },
      metadata: { after: { team: 'core' }, before: null },
    }),
    pos: ++pos,
  };
}
type W = ReturnType<typeof write>;

const INSERT_RESOURCE = `insert into "resources" ("id", "workspace_id", "env", "name", "type", "status", "metadata", "created_at", "updated_at") values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;
const UPSERT_COUNT = `insert into "resource_counts" ("workspace_id", "env", "status", "type", "slot", "n") values ($1, $2, $3, $4, $5, $6) on conflict ("workspace_id", "env", "status", "type", "slot") do update set "n" = "resource_counts"."n" + "excluded"."n"`;
const INSERT_EVENT = `insert into "events" ("id", "workspace_id", "env", "type", "resource_id", "payload", "created_at") values ($1, $2, $3, $4, $5, $6, $7)`;
const INSERT_DELIVERY = `insert into "deliveries" ("id", "webhook_id", "event_id", "event_type", "workspace_id", "env", "status", "attempt_count", "next_attempt_at", "lease_until", "leased_by", "last_response_status", "last_error", "created_at", "updated_at") values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`;
const NOTIFY = `select pg_notify($1, '')`;
const HOLD = `select pg_advisory_xact_lock_shared(hashtextextended(n, 0)) from unnest($1::text[]) as n`;
const IS_ACTIVE = `select "api_keys"."id" from "api_keys" inner join "users" on "users"."id" = "api_keys"."user_id" where "api_keys"."id" = $1 and "api_keys"."revoked_at" is null and ("api_keys"."expires_at" is null or "api_keys"."expires_at" > $2) and "users"."removed_at" is null`;
const INSERT_AUDIT = `insert into "audit_pending" ("id", "workspace_id", "time", "actor_type", "actor_id", "actor_name", "actor_user_id", "action", "target_type", "target_id", "env", "changes", "request_id", "ip", "user_agent", "pos") values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`;

const auditValues = (w: W) => [
  w.auditId,
  ws,
  w.time,
  'key',
  w.key,
  'Default live key',
  userId,
  'resource.created',
  'resource',
  w.id,
  'live',
  w.changes,
  'req_bench',
  '127.0.0.1',
  'bench',
  w.pos,
];

class CredentialEnded extends Error {}

async function shapeA(w: W): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query('begin');
    await c.query({
      name: 'ins_res',
      text: INSERT_RESOURCE,
      values: [w.id, ws, 'live', 'bench', 'standard', 'active', w.metadata, w.time, w.time],
    });
    await c.query({ name: 'ups_cnt', text: UPSERT_COUNT, values: [ws, 'live', 'active', 'standard', w.slot, 1] });
    await c.query({
      name: 'ins_evt',
      text: INSERT_EVENT,
      values: [w.eventId, ws, 'live', 'resource.created', w.id, w.payload, w.time],
    });
    await c.query({
      name: 'ins_dlv',
      text: INSERT_DELIVERY,
      values: [
        w.deliveryId,
        webhookId,
        w.eventId,
        'resource.created',
        ws,
        'live',
        'pending',
        0,
        w.time,
        null,
        null,
        null,
        null,
        w.time,
        w.time,
      ],
    });
    await c.query({ name: 'notify', text: NOTIFY, values: ['wsvc_deliveries'] });
    await c.query({ name: 'hold', text: HOLD, values: [[`key:${w.key}`, `user:${userId}`]] });
    const active = await c.query({ name: 'active', text: IS_ACTIVE, values: [w.key, new Date().toISOString()] });
    if (active.rows.length === 0) throw new CredentialEnded();
    await c.query({ name: 'ins_aud', text: INSERT_AUDIT, values: auditValues(w) });
    await c.query('commit');
    c.release();
  } catch (err) {
    await c.query('rollback').catch(() => {});
    c.release();
    throw err;
  }
}

const lit = (v: string | number | null) =>
  v === null ? 'null' : typeof v === 'number' ? String(v) : pg.Client.prototype.escapeLiteral(v);
const row = (vs: (string | number | null)[]) => `(${vs.map(lit).join(', ')})`;

async function shapeB(w: W): Promise<void> {
  const text =
    'begin;' +
    `insert into "resources" ("id", "workspace_id", "env", "name", "type", "status", "metadata", "created_at", "updated_at") values ${row([w.id, ws, 'live', 'bench', 'standard', 'active', w.metadata, w.time, w.time])};` +
    `insert into "resource_counts" ("workspace_id", "env", "status", "type", "slot", "n") values ${row([ws, 'live', 'active', 'standard', w.slot, 1])} on conflict ("workspace_id", "env", "status", "type", "slot") do update set "n" = "resource_counts"."n" + "excluded"."n";` +
    `insert into "events" ("id", "workspace_id", "env", "type", "resource_id", "payload", "created_at") values ${row([w.eventId, ws, 'live', 'resource.created', w.id, w.payload, w.time])};` +
    `insert into "deliveries" ("id", "webhook_id", "event_id", "event_type", "workspace_id", "env", "status", "attempt_count", "next_attempt_at", "created_at", "updated_at") values ${row([w.deliveryId, webhookId, w.eventId, 'resource.created', ws, 'live', 'pending', 0, w.time, w.time, w.time])};` +
    `select pg_notify('wsvc_deliveries', '');` +
    `select wsvc_hold_key(${lit(w.key)}, ${lit(userId)}, ${lit(new Date().toISOString())});` +
    `insert into "audit_pending" ("id", "workspace_id", "time", "actor_type", "actor_id", "actor_name", "actor_user_id", "action", "target_type", "target_id", "env", "changes", "request_id", "ip", "user_agent", "pos") values ${row(auditValues(w))};` +
    'commit';
  const c = await pool.connect();
  try {
    await c.query(text);
    c.release();
  } catch (err) {
    // An error inside the string leaves the transaction aborted: the rest of the string was skipped.
    await c.query('rollback').catch(() => {});
    c.release();
    throw (err as { code?: string }).code === 'WK401' ? new CredentialEnded() : err;
  }
}

/** The 27 values of the function (c) and the CTE (d): $1…$27 in the same order. */
const oneStatementValues = (w: W) => [
  w.id,
  ws,
  'live',
  'bench',
  'standard',
  w.metadata,
  w.time,
  w.slot,
  w.eventId,
  w.payload,
  [w.deliveryId],
  [webhookId],
  w.key,
  userId,
  new Date().toISOString(),
  ...[w.auditId, w.time, 'key', w.key, 'Default live key', userId, 'resource.created', w.changes],
  ...['req_bench', '127.0.0.1', 'bench', w.pos],
];

/** A write as one named statement; the key's re-check failing (WK401) is a CredentialEnded. */
async function oneStatement(name: string, text: string, w: W): Promise<void> {
  try {
    await pool.query({ name, text, values: oneStatementValues(w) });
  } catch (err) {
    throw (err as { code?: string }).code === 'WK401' ? new CredentialEnded() : err;
  }
}

function shapeC(w: W): Promise<void> {
  return oneStatement(
    'create_fn',
    `select wsvc_create_resource(${Array.from({ length: 27 }, (_, i) => `$${i + 1}`).join(', ')})`,
    w,
  );
}

const CTE = `with
  lk as (select count(pg_advisory_xact_lock_shared(hashtextextended(n, 0))) as n from unnest(array['key:' || $13, 'user:' || $14]) as n),
  ok as (select wsvc_raise_unless(exists (select 1 from api_keys k join users u on u.id = k.user_id
           where k.id = $13 and k.revoked_at is null and (k.expires_at is null or k.expires_at > $15::timestamptz)
             and u.removed_at is null)) as ok from lk),
  r as (insert into resources (id, workspace_id, env, name, type, status, metadata, created_at, updated_at)
        select $1, $2, $3, $4, $5, 'active', $6::jsonb, $7::timestamptz, $7::timestamptz from ok where ok.ok = 1 returning id),
  c as (insert into resource_counts (workspace_id, env, status, type, slot, n) values ($2, $3, 'active', $5, $8, 1)
        on conflict (workspace_id, env, status, type, slot) do update set n = resource_counts.n + excluded.n returning 1),
  e as (insert into events (id, workspace_id, env, type, resource_id, payload, created_at)
        values ($9, $2, $3, 'resource.created', $1, $10, $7::timestamptz) returning 1),
  d as (insert into deliveries (id, webhook_id, event_id, event_type, workspace_id, env, status, attempt_count,
          next_attempt_at, created_at, updated_at)
        select x.id, x.webhook_id, $9, 'resource.created', $2, $3, 'pending', 0, $7::timestamptz, $7::timestamptz,
          $7::timestamptz from unnest($11::text[], $12::text[]) as x(id, webhook_id) returning 1),
  a as (insert into audit_pending (id, workspace_id, time, actor_type, actor_id, actor_name, actor_user_id, action,
          target_type, target_id, env, changes, request_id, ip, user_agent, pos)
        values ($16, $2, $17, $18, $19, $20, $21, $22, 'resource', $1, $3, $23, $24, $25, $26, $27) returning 1)
select (select count(*) from r) as r, pg_notify('wsvc_deliveries', '')`;

function shapeD(w: W): Promise<void> {
  return oneStatement('create_cte', CTE, w);
}

/** Shape e's statements, prepared with SQL's PREPARE once per connection (their parameters' types inferred). */
const PREPARES = [
  `prepare wsvc_ins_res as ${INSERT_RESOURCE}`,
  `prepare wsvc_ups_cnt as ${UPSERT_COUNT}`,
  `prepare wsvc_ins_evt as ${INSERT_EVENT}`,
  `prepare wsvc_ins_dlv as ${INSERT_DELIVERY}`,
  `prepare wsvc_ins_aud as ${INSERT_AUDIT}`,
].join(';');
const prepared = new WeakSet<pg.PoolClient>();
const args = (vs: (string | number | null)[]) => `(${vs.map(lit).join(', ')})`;

async function shapeE(w: W): Promise<void> {
  const c = await pool.connect();
  try {
    if (!prepared.has(c)) {
      await c.query(PREPARES);
      prepared.add(c);
    }
    await c.query(
      'begin;' +
        `execute wsvc_ins_res${args([w.id, ws, 'live', 'bench', 'standard', 'active', w.metadata, w.time, w.time])};` +
        `execute wsvc_ups_cnt${args([ws, 'live', 'active', 'standard', w.slot, 1])};` +
        `execute wsvc_ins_evt${args([w.eventId, ws, 'live', 'resource.created', w.id, w.payload, w.time])};` +
        `execute wsvc_ins_dlv${args([w.deliveryId, webhookId, w.eventId, 'resource.created', ws, 'live', 'pending', 0, w.time, null, null, null, null, w.time, w.time])};` +
        `select pg_notify('wsvc_deliveries', '');` +
        `select wsvc_hold_key(${lit(w.key)}, ${lit(userId)}, ${lit(new Date().toISOString())});` +
        `execute wsvc_ins_aud${args(auditValues(w))};` +
        'commit',
    );
    c.release();
  } catch (err) {
    await c.query('rollback').catch(() => {});
    c.release();
    throw (err as { code?: string }).code === 'WK401' ? new CredentialEnded() : err;
  }
}

async function shapeF(w: W): Promise<void> {
  const c = await pipePool.connect();
  // All written at once, each with its own Sync; after an error the transaction is aborted, every later
  // statement fails (25P02) and COMMIT answers ROLLBACK.
  const sent = [
    c.query('begin'),
    c.query({
      name: 'ins_res',
      text: INSERT_RESOURCE,
      values: [w.id, ws, 'live', 'bench', 'standard', 'active', w.metadata, w.time, w.time],
    }),
    c.query({ name: 'ups_cnt', text: UPSERT_COUNT, values: [ws, 'live', 'active', 'standard', w.slot, 1] }),
    c.query({
      name: 'ins_evt',
      text: INSERT_EVENT,
      values: [w.eventId, ws, 'live', 'resource.created', w.id, w.payload, w.time],
    }),
    c.query({
      name: 'ins_dlv',
      text: INSERT_DELIVERY,
      values: [
        w.deliveryId,
        webhookId,
        w.eventId,
        'resource.created',
        ws,
        'live',
        'pending',
        0,
        w.time,
        null,
        null,
        null,
        null,
        w.time,
        w.time,
      ],
    }),
    c.query({ name: 'notify', text: NOTIFY, values: ['wsvc_deliveries'] }),
    c.query({
      name: 'hold_key',
      text: 'select wsvc_hold_key($1, $2, $3)',
      values: [w.key, userId, new Date().toISOString()],
    }),
    c.query({ name: 'ins_aud', text: INSERT_AUDIT, values: auditValues(w) }),
    c.query('commit'),
  ];
  const results = await Promise.allSettled(sent);
  c.release();
  const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
  if (failed) throw (failed.reason as { code?: string }).code === 'WK401' ? new CredentialEnded() : failed.reason;
  const commit = results[results.length - 1] as PromiseFulfilledResult<pg.QueryResult>;
  if (commit.value.command !== 'COMMIT') throw new Error(`the transaction ended with ${commit.value.command}`);
}

const RUN: Record<Shape, (w: W) => Promise<void>> = {
  a: shapeA,
  b: shapeB,
  c: shapeC,
  d: shapeD,
  e: shapeE,
  f: shapeF,
};

/** Each shape refuses a revoked key and then writes nothing; with the live key it writes every row once. */
async function check(shape: Shape) {
  const count = async (id: string) =>
    (
      await pool.query(
        `select (select count(*) from resources where id = $1) + (select count(*) from events where resource_id = $1)
          + (select count(*) from audit_pending where target_id = $1)
          + (select count(*) from deliveries d join events e on e.id = d.event_id where e.resource_id = $1) as n`,
        [id],
      )
    ).rows[0].n as string;
  const bad = write(revokedKeyId);
  let refused = false;
  try {
    await RUN[shape](bad);
  } catch (err) {
    if (!(err instanceof CredentialEnded)) throw err;
    refused = true;
  }
  if (!refused || (await count(bad.id)) !== '0') throw new Error(`shape ${shape} wrote with a revoked key`);
  const good = write(keyId);
  await RUN[shape](good);
  if ((await count(good.id)) !== '4') throw new Error(`shape ${shape} did not write its four rows`);
}

/**
 * D12: a revocation holds the key's lock exclusive, revokes, commits; a write that waited for the lock must
 * see the revocation. True when the shape refused such a write (and wrote nothing).
 */
async function revokedWhileWaiting(shape: Shape): Promise<boolean> {
  await admin.query('update api_keys set revoked_at = null where id = $1', [revokedKeyId]);
  await admin.query('begin');
  await admin.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`key:${revokedKeyId}`]);
  await admin.query('update api_keys set revoked_at = $1 where id = $2', [new Date().toISOString(), revokedKeyId]);
  const w = write(revokedKeyId);
  const outcome = RUN[shape](w).then(
    () => 'wrote',
    (err) => (err instanceof CredentialEnded ? 'refused' : Promise.reject(err)),
  );
  // Commit the revocation once the write is waiting for the lock.
  for (;;) {
    const { rows } = await pool.query(
      `select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted and pid = any($1)`,
      [backendPids],
    );
    if (rows[0].n > 0) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  await admin.query('commit');
  const result = await outcome;
  const { rows } = await pool.query('select count(*)::int as n from resources where id = $1', [w.id]);
  return result === 'refused' && rows[0].n === 0;
}

async function measure(shape: Shape, ms: number) {
  const until = performance.now() + ms;
  let done = 0;
  const cpu0 = process.cpuUsage();
  const be0 = cpuMsOf(backendPids);
  const aux0 = cpuMsOf(auxPids);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (performance.now() < until) {
        await RUN[shape](write(keyId));
        done++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return {
    wps: done / secs,
    cpuUs: (cpu.user + cpu.system) / done,
    backendUs: ((cpuMsOf(backendPids) - be0) * 1000) / done,
    auxUs: ((cpuMsOf(auxPids) - aux0) * 1000) / done,
  };
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const f0 = (x: number) => x.toFixed(0);
try {
  for (const s of SHAPES) await check(s);
  const strict: string[] = [];
  for (const s of SHAPES) strict.push(`${s}: ${(await revokedWhileWaiting(s)) ? 'refused' : 'WROTE'}`);
  process.stdout.write(`a key revoked while the write waits for its lock (revocation rule): ${strict.join(', ')}\n`);
  process.stdout.write(
    `load average ${load()}; ${WRITERS} writers, pool ${POOL}, ${ROUNDS} interleaved rounds of ${DURATION_MS / 1000} s per shape; each shape refused a revoked key and wrote nothing\n`,
  );
  for (const s of SHAPES) await measure(s, 1000); // warm-up
  const results = new Map<Shape, Awaited<ReturnType<typeof measure>>[]>(SHAPES.map((s) => [s, []]));
  process.stdout.write(
    '\n| round | shape | writes/s | client CPU µs/write | backends CPU µs/write | WAL writer, checkpointer, bgwriter µs/write |\n|---|---|---:|---:|---:|---:|\n',
  );
  for (let r = 0; r < ROUNDS; r++) {
    const order = [...SHAPES.slice(r % SHAPES.length), ...SHAPES.slice(0, r % SHAPES.length)];
    for (const s of order) {
      const m = await measure(s, DURATION_MS);
      results.get(s)?.push(m);
      process.stdout.write(
        `| ${r + 1} | ${NAMES[s]} | ${f0(m.wps)} | ${f0(m.cpuUs)} | ${f0(m.backendUs)} | ${f0(m.auxUs)} |\n`,
      );
    }
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] as number;
  process.stdout.write(
    '\nmedians over the rounds (min–max of writes/s)\n\n| shape | writes/s | client CPU µs/write | its backends µs/write | WAL writer etc. µs/write |\n|---|---:|---:|---:|---:|\n',
  );
  for (const s of SHAPES) {
    const m = results.get(s) ?? [];
    const w = m.map((x) => x.wps);
    process.stdout.write(
      `| ${NAMES[s]} | ${f0(med(w))} (${f0(Math.min(...w))}–${f0(Math.max(...w))}) | ${f0(med(m.map((x) => x.cpuUs)))} | ${f0(med(m.map((x) => x.backendUs)))} | ${f0(med(m.map((x) => x.auxUs)))} |\n`,
    );
  }
  process.stdout.write(`\nload average after ${load()}\n`);
} finally {
  await pool.end();
  await pipePool.end();
  await admin.query(`drop schema ${schema} cascade`);
  await admin.end();
}
process.exit(0);
