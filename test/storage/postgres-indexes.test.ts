import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestStorage } from '../helpers/storage.js';

// Backends: postgres — PostgreSQL's query plans
// Tier: full — PostgreSQL/Redis only, and `npm test` runs on SQLite
// docs/operations.md every list and filter is served by an index on PostgreSQL: the plan has no Seq Scan,
// no Sort (the id order of lists comes from the index) and every filter column is in the Index Cond.
// Sequential and bitmap scans are disabled so the empty test tables show which index *can* serve the query.
const pgUrl = process.env.TEST_DATABASE_URL;

type PlanNode = {
  'Node Type': string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
};
const flatten = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(flatten)];

const QUERIES: { name: string; sql: string; filtered: string[] }[] = [
  {
    name: 'resources',
    sql: `select * from resources where workspace_id = 'w' and env = 'live'`,
    filtered: ['workspace_id', 'env'],
  },
  ...['status', 'type'].map((c) => ({
    name: `resources ?${c}=`,
    sql: `select * from resources where workspace_id = 'w' and env = 'live' and ${c} = 'x'`,
    filtered: ['workspace_id', 'env', c],
  })),
  {
    name: 'resources ?status=&type=',
    sql: `select * from resources where workspace_id = 'w' and env = 'live' and status = 'active' and type = 'custom'`,
    filtered: ['workspace_id', 'env', 'status', 'type'],
  },
  { name: 'users', sql: `select * from users where workspace_id = 'w'`, filtered: ['workspace_id'] },
  { name: 'api keys', sql: `select * from api_keys where workspace_id = 'w'`, filtered: ['workspace_id'] },
  {
    name: 'webhooks',
    sql: `select * from webhooks where workspace_id = 'w' and env = 'live'`,
    filtered: ['workspace_id', 'env'],
  },
  {
    name: 'events',
    sql: `select * from events where workspace_id = 'w' and env = 'live'`,
    filtered: ['workspace_id', 'env'],
  },
  ...['type', 'resource_id'].map((c) => ({
    name: `events ?${c === 'type' ? 'event' : c}=`,
    sql: `select * from events where workspace_id = 'w' and env = 'live' and ${c} = 'x'`,
    filtered: ['workspace_id', 'env', c],
  })),
  {
    name: 'deliveries of a webhook',
    sql: `select * from deliveries where webhook_id = 'w'`,
    filtered: ['webhook_id'],
  },
  {
    // docs/usage.md#request-log: GET /v1/requests pages by id (newest first) in one workspace and environment.
    name: 'request log',
    sql: `select * from request_log where workspace_id = 'w' and env = 'live'`,
    filtered: ['workspace_id', 'env'],
  },
  {
    name: 'deliveries of a webhook ?status=',
    sql: `select * from deliveries where webhook_id = 'w' and status = 'failed'`,
    filtered: ['webhook_id', 'status'],
  },
];

describe.skipIf(!pgUrl)(
  'PostgreSQL indexes for every list and filter (docs/operations.md, docs/api.md#lists-and-paging)',
  () => {
    let storage: Awaited<ReturnType<typeof openTestStorage>>;
    beforeAll(async () => {
      storage = await openTestStorage();
    });
    afterAll(() => storage.close());

    it.each(QUERIES)('$name: index scan in id order, filters in the index condition', async (q) => {
      // First page (offset) and a keyset page (`id > cursor`) of the same list.
      const plans = await storage.db.connection().execute(async (conn) => {
        await sql`set enable_seqscan = off`.execute(conn);
        await sql`set enable_bitmapscan = off`.execute(conn);
        try {
          const out: PlanNode[][] = [];
          for (const extra of ['', ` and id > 'a'`]) {
            const text = `explain (format json) ${q.sql}${extra} order by id limit 51`;
            const r = await sql.raw<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(text).execute(conn);
            out.push(flatten(r.rows[0]?.['QUERY PLAN'][0].Plan as PlanNode));
          }
          return out;
        } finally {
          await sql`reset all`.execute(conn);
        }
      });
      for (const plan of plans) {
        const types = plan.map((n) => n['Node Type']);
        expect(types).not.toContain('Seq Scan');
        expect(types).not.toContain('Sort');
        const scan = plan.find((n) => n['Index Cond']);
        for (const col of q.filtered) expect(scan?.['Index Cond']).toContain(col);
        expect(scan?.Filter).toBeUndefined();
      }
    });
  },
);
